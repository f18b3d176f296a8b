"""The negation rule sets an SNCSE run can choose (``negation_rules``): the one place for their names and default.

- ``project`` (the default): :mod:`~sentsweep.methods.sncse.negation.rules`, the paper's rules with the reference's
  bugs fixed and the departures its docstring lists;
- ``reference``: :mod:`~sentsweep.methods.sncse.negation.reference`, the SNCSE repository's
  ``generate_soft_negative_samples.py`` and ``train_SNCSE.py`` lookup, bug-compatible, for reproduction rows.

:func:`rule_set` is the one check of a name (a config field validator and :class:`Negator` both call it). A rule
set's version is read from its module at call time (a test may change ``rules.RULES_VERSION``), and its
:attr:`RuleSet.cache_tag` goes into the negation cache's file name, so one set's negations never serve another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from sentsweep.errors import ConfigError
from sentsweep.methods.sncse.negation import reference, rules
from sentsweep.methods.sncse.negation.rules import Negation

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

    from sentsweep.data.spacy_models import PipeSet

DEFAULT_RULE_SET = "project"


def _project(doc: Doc, lemmatize: Callable[[Token], str]) -> Negation:
    return rules.negate_doc(doc, lemmatize)


def _reference(doc: Doc, lemmatize: Callable[[Token], str]) -> Negation:
    """The reference reads spaCy's own ``lemma_`` (its full pipeline), never the on-demand lemma."""
    return reference.negate_doc(doc)


@dataclass(frozen=True)
class RuleSet:
    """A named set of negation rules: how to negate a parsed sentence and what to load and report for it."""

    name: str
    module: ModuleType
    negate_doc: Callable[[Doc, Callable[[Token], str]], Negation]
    #: The spaCy components to run (:func:`sentsweep.data.spacy_models.load_spacy`).
    pipes: PipeSet
    #: A negation decided from the text alone, before any parse (the reference's training lookup), else None.
    before_parse: Callable[[str], Negation | None] | None = None

    @property
    def version(self) -> str:
        return str(self.module.RULES_VERSION)

    @property
    def rules(self) -> tuple[str, ...]:
        return tuple(self.module.RULES)

    @property
    def fallback(self) -> frozenset[str]:
        return frozenset(self.module.FALLBACK_RULES)

    @property
    def cache_tag(self) -> str:
        """The rule set's part of a cache file name: ``rules<v>`` for the default (the name caches had before
        there was a choice, so they still hit), ``<name>-rules<v>`` for the others."""
        if self.name == DEFAULT_RULE_SET:
            return f"rules{self.version}"
        return f"{self.name}-rules{self.version}"


RULE_SETS: dict[str, RuleSet] = {
    "project": RuleSet("project", rules, _project, "tagger-parser"),
    "reference": RuleSet("reference", reference, _reference, "full", before_parse=reference.lookup_miss),
}


def rule_set(name: str, *, field: str = "negation_rules") -> RuleSet:
    """The rule set called ``name``; a ConfigError naming ``field`` and the known names otherwise."""
    try:
        return RULE_SETS[name]
    except (KeyError, TypeError):
        known = ", ".join(RULE_SETS)
        raise ConfigError(f"unknown negation rule set {name!r}; known: {known}", field=field) from None
