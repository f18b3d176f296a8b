"""Soft negatives for SNCSE (seed paper 002, section 3): explicit negation of a sentence with spaCy rules.

- :mod:`~sentsweep.methods.sncse.negation.rules`: the project's rules on one parsed ``Doc`` (:func:`negate_doc`,
  :data:`RULES`, :data:`RULES_VERSION`; the module docstring lists every rule);
- :mod:`~sentsweep.methods.sncse.negation.reference`: the SNCSE reference code's rules and training lookup,
  bug-compatible (for reproduction rows);
- :mod:`~sentsweep.methods.sncse.negation.rule_sets`: the named rule sets (``project``, the default, and
  ``reference``), :func:`rule_set`, the one check of a ``negation_rules`` value;
- :mod:`~sentsweep.methods.sncse.negation.negator`: :class:`Negator`, batched parsing with ``nlp.pipe``;
- :mod:`~sentsweep.methods.sncse.negation.corpus`: :func:`negate_corpus`, :class:`NegationStats` and the disk
  cache keyed by corpus hash, model, rule set and its version; :func:`write_pairs`.

Every public name is importable from here. Code that changes ``RULES_VERSION`` at run time (a test) must set it on
the ``rules`` module, which the cache key reads.
"""

from __future__ import annotations

from sentsweep.methods.sncse.negation.corpus import NegationStats, cache_file, negate_corpus, write_pairs
from sentsweep.methods.sncse.negation.negator import Negator
from sentsweep.methods.sncse.negation.rule_sets import DEFAULT_RULE_SET, RULE_SETS, RuleSet, rule_set
from sentsweep.methods.sncse.negation.rules import (
    FALLBACK_RULES,
    RULES,
    RULES_VERSION,
    Negation,
    negate_doc,
    parsed_lemma,
)

__all__ = [
    "DEFAULT_RULE_SET",
    "FALLBACK_RULES",
    "RULES",
    "RULE_SETS",
    "RULES_VERSION",
    "Negation",
    "NegationStats",
    "Negator",
    "RuleSet",
    "cache_file",
    "negate_corpus",
    "negate_doc",
    "parsed_lemma",
    "rule_set",
    "write_pairs",
]
