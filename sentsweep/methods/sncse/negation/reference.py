"""The SNCSE reference code's negation rules, bug for bug, for rows that reproduce the paper's 78.97.

Read from the SNCSE repository (github.com/Sense-GVT/SNCSE; Wang et al., "SNCSE: Contrastive Learning for
Unsupervised Sentence Embedding with Soft Negative Samples", seed paper 002):

- ``generate_soft_negative_samples.py`` (commit 919b928), ``convert_to_negation(parser, sentence)``, run with
  ``en_core_web_sm.load()`` (every component, so ``lemma_`` is the pipeline's) on each ``line.strip()`` of
  ``wiki1m_for_simcse.txt``; the output is the token texts joined by single spaces (the original spacing is lost):

  1. if a token's text is exactly ``"not"`` (any dependency, any clause; not "Not", not "n't"), the first one is
     deleted (:data:`REMOVE_NOT`);
  2. else the tokens are scanned left to right up to the first ``aux``/``auxpass`` or the first ``ROOT``,
     whichever comes first:

     - ``aux``/``auxpass`` first: " not" is appended to it (:data:`AUX`; "do n't" becomes "do not n't", and the
       auxiliary may be a subordinate clause's);
     - ``ROOT`` first: " not" after it when its lower-cased text is one of the 14 :data:`SPECIAL_WORDS`
       (:data:`ROOT_SPECIAL`; "be", "'s", "'re", "'m" are not among them); else, tagged VBP / VBZ / VBD, it becomes
       "do not" / "does not" / "did not" + its spaCy lemma (:data:`ROOT_DO`; "He 's happy" gives "He does not be
       happy"); else "Not" goes first (:data:`NOT_PREFIX`);
  3. with neither (no token), "Not" first as well.

- ``SNCSE/train_SNCSE.py`` (commit 307025d), ``prepare_features``: the training sentence gets " ." when its last
  character is not punctuation, and its negation is ``negation.get(sentence, "Not " + sentence)`` in a dict keyed
  by the generator's stripped lines. A sentence that lacked final punctuation (or had surrounding whitespace)
  is not a key, so its soft negative is "Not " + the sentence + " ." whatever the rules gave
  (:data:`LOOKUP_MISS`, :func:`lookup_miss`). The one case this does not reproduce: the corpus holding another
  line equal to the sentence + " ." (the dict lookup would then find that line's negation), which depends on the
  corpus, not on the sentence.

Both "Not" forms count as the fallback (:data:`FALLBACK_RULES`). ``empty`` marks a blank sentence (kept as is; the
reference's training script fails on one, and corpora here drop them).

This module owns the reference's behaviour only; :mod:`~sentsweep.methods.sncse.negation.rules` holds the
project's rules, which fix these bugs (its docstring lists the departures).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentsweep.methods.sncse.negation.rules import Negation
from sentsweep.methods.sncse.punctuation import with_final_punctuation

if TYPE_CHECKING:
    from spacy.tokens import Doc

#: Bump when these rules change: cached negations made by older ones are then ignored.
RULES_VERSION = "1"
REMOVE_NOT = "ref-remove-not"
AUX = "ref-aux"
ROOT_SPECIAL = "ref-root-special"
ROOT_DO = "ref-root-do"
NOT_PREFIX = "ref-not-prefix"
LOOKUP_MISS = "ref-lookup-miss"
#: Every rule name of the reference set, in the order they are tried.
RULES: tuple[str, ...] = (LOOKUP_MISS, REMOVE_NOT, AUX, ROOT_SPECIAL, ROOT_DO, NOT_PREFIX, "empty")
FALLBACK_RULES: frozenset[str] = frozenset({NOT_PREFIX, LOOKUP_MISS})
#: The reference's ``special_words``: a ROOT among them takes " not" after it.
SPECIAL_WORDS: frozenset[str] = frozenset(
    {"am", "is", "was", "are", "were", "can", "could", "will", "would", "shall", "should", "may", "must", "might"}
)
_DO = {"VBP": "do", "VBZ": "does", "VBD": "did"}


def lookup_miss(sentence: str) -> Negation | None:
    """The soft negative ``train_SNCSE.py`` used when its lookup missed (``"Not " + sentence + " ."``), else None.

    The lookup key is the sentence after the training script's final-punctuation step; the generator's keys are
    its stripped input lines, so only a sentence that already ended in punctuation and had no surrounding
    whitespace is found. A blank sentence is left to :func:`negate_doc` (``empty``).
    """
    if not sentence.strip():
        return None
    keyed = with_final_punctuation(sentence)
    if keyed == sentence.strip():
        return None
    return Negation(f"Not {keyed}", LOOKUP_MISS)


def negate_doc(doc: Doc) -> Negation:
    """``convert_to_negation`` of the reference on a parsed sentence (full pipeline: its ``lemma_`` is used as is)."""
    if not doc.text.strip() or len(doc) == 0:
        return Negation(doc.text, "empty")
    tokens = [tok.text for tok in doc]
    if "not" in tokens:
        del tokens[tokens.index("not")]
        return Negation(" ".join(tokens), REMOVE_NOT)
    rule = NOT_PREFIX
    for tok in doc:
        if tok.dep_ in ("aux", "auxpass"):
            tokens[tok.i] += " not"
            rule = AUX
            break
        if tok.dep_ == "ROOT":
            if tok.text.lower() in SPECIAL_WORDS:
                tokens[tok.i] += " not"
                rule = ROOT_SPECIAL
            elif tok.tag_ in _DO:
                tokens[tok.i] = f"{_DO[tok.tag_]} not {tok.lemma_}"
                rule = ROOT_DO
            break
    if rule == NOT_PREFIX:
        tokens.insert(0, "Not")
    return Negation(" ".join(tokens), rule)
