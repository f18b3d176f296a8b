"""SNCSE's final-punctuation step (seed paper 002; the reference's ``train_SNCSE.py``), shared without torch.

The reference appends " ." to a training sentence whose last non-space character is not in
``string.punctuation`` (``if sentence.strip()[-1] not in PUNCTUATION: sentence = sentence + " ."``), and does the
same to its negation. The prompt encoder (:mod:`~sentsweep.methods.sncse.model`) applies it to every prompt; the
reference negation rules (:mod:`~sentsweep.methods.sncse.negation.reference`) need it to reproduce the training
script's lookup, so it lives here, importable without torch.
"""

from __future__ import annotations

import string

PUNCTUATION = frozenset(string.punctuation)


def with_final_punctuation(sentence: str) -> str:
    """``sentence`` with " ." appended when it does not end in punctuation (SNCSE's preprocessing)."""
    stripped = sentence.rstrip()
    if stripped and stripped[-1] in PUNCTUATION:
        return sentence
    return f"{sentence} ."
