"""Soft negatives for SNCSE (seed paper 002, section 3): explicit negation of a sentence with spaCy rules.

- :mod:`~sentsweep.methods.sncse.negation.rules`: the rules on one parsed ``Doc`` (:func:`negate_doc`,
  :data:`RULES`, :data:`RULES_VERSION`; the module docstring lists every rule);
- :mod:`~sentsweep.methods.sncse.negation.negator`: :class:`Negator`, batched parsing with ``nlp.pipe``;
- :mod:`~sentsweep.methods.sncse.negation.corpus`: :func:`negate_corpus`, :class:`NegationStats` and the disk
  cache keyed by corpus hash, model and rules version; :func:`write_pairs`.

Every public name is importable from here. Code that changes ``RULES_VERSION`` at run time (a test) must set it on
the ``rules`` module, which the cache key reads.
"""

from __future__ import annotations

from sentsweep.methods.sncse.negation.corpus import NegationStats, cache_file, negate_corpus, write_pairs
from sentsweep.methods.sncse.negation.negator import Negator
from sentsweep.methods.sncse.negation.rules import (
    FALLBACK_RULES,
    RULES,
    RULES_VERSION,
    Negation,
    negate_doc,
    parsed_lemma,
)

__all__ = [
    "FALLBACK_RULES",
    "RULES",
    "RULES_VERSION",
    "Negation",
    "NegationStats",
    "Negator",
    "cache_file",
    "negate_corpus",
    "negate_doc",
    "parsed_lemma",
    "write_pairs",
]
