"""Constituency backends: spaCy docs (tokens + dependency parse) -> constituency spans over their tokens.

- ``benepar`` or ``stanza`` when installed: real constituency parsers (Kitaev & Klein 2018 is the one
  the multi-view paper uses). Both download their models on first use, so they need internet once;
- ``derived`` (offline, always available): a tree read off the dependency parse, each head with its
  dependents forming a phrase; ``derived-xbar`` also brackets a head with its right dependents before
  adding the left ones (an X-bar-like split of subject and predicate);
- ``auto``: benepar, else stanza, else ``derived`` with a loud warning (``logging.warning``) and the
  reasons kept in the backend's ``fallback_reason``, so that a run can record it fell back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from importlib import metadata
from typing import Any, Protocol

from sentsweep.data.parsing.spans import PARSING_VERSION, Span, dependency_spans
from sentsweep.data.treebank import Tree, ptb_escape, read_bracketed
from sentsweep.errors import ConfigError

logger = logging.getLogger(__name__)
CONSTITUENCY_BACKENDS: tuple[str, ...] = ("auto", "derived", "derived-xbar", "benepar", "stanza")


def check_backend_name(name: str) -> None:
    """Raise ConfigError (field ``constituency``) unless ``name`` is one of :data:`CONSTITUENCY_BACKENDS`."""
    if name not in CONSTITUENCY_BACKENDS:
        raise ConfigError(
            f"unknown constituency backend '{name}'; known: {', '.join(CONSTITUENCY_BACKENDS)}",
            field="constituency",
        )


class ConstituencyBackend(Protocol):
    """Turns spaCy docs (tokens + dependency parse) into constituency spans over their tokens."""

    name: str
    version: str

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]: ...


class DerivedBackend:
    """Offline constituency read off the dependency parse (see :func:`dependency_spans`)."""

    def __init__(self, variant: str = "flat") -> None:
        if variant not in ("flat", "xbar"):
            raise ConfigError(f"unknown derivation '{variant}'", field="constituency")
        self.variant = variant
        self.name = "derived" if variant == "flat" else "derived-xbar"
        self.version = str(PARSING_VERSION)
        #: Why ``auto`` fell back to this backend (None when it was asked for by name).
        self.fallback_reason: str | None = None

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]:
        return [dependency_spans(doc_heads(doc), self.variant) for doc in docs]


def tree_spans(bracketed: str, offset: int = 0) -> list[Span]:
    """The constituent spans of a bracketed tree string, shifted by ``offset`` tokens."""
    trees: list[Tree] = read_bracketed(bracketed)
    return [(s + offset, e + offset) for tree in trees for s, e in tree.spans()]


class BeneparBackend:
    """Berkeley Neural Parser (Kitaev & Klein 2018) as a spaCy component; needs its model downloaded."""

    def __init__(self, model: str = "benepar_en3") -> None:
        try:
            import benepar
        except ImportError:
            raise ConfigError(
                "benepar is not installed (`pip install benepar`)", field="constituency"
            ) from None
        self.name = f"benepar-{model}"
        self.version = metadata.version("benepar")
        try:
            self.parser = benepar.Parser(model)
        except Exception as exc:  # LookupError when the model was never downloaded
            raise ConfigError(
                f"benepar model '{model}' is not available ({exc}); download it once with internet: "
                f"python -c \"import benepar; benepar.download('{model}')\"",
                field="constituency",
            ) from None

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]:
        import benepar

        out: list[list[Span]] = []
        for doc in docs:
            spans: list[Span] = []
            for sent in doc.sents:
                words = [ptb_escape(t.text) for t in sent]
                tree = self.parser.parse(benepar.InputSentence(words=words))
                spans.extend(tree_spans(_tree_to_string(tree), offset=sent.start))
            out.append(spans)
        return out


class StanzaBackend:
    """Stanza's constituency parser on spaCy's tokens (pretokenized); needs its English models."""

    def __init__(self) -> None:
        try:
            import stanza
        except ImportError:
            raise ConfigError(
                "stanza is not installed (`pip install stanza`)", field="constituency"
            ) from None
        self.name = "stanza"
        self.version = metadata.version("stanza")
        try:
            self.pipeline = stanza.Pipeline(
                lang="en",
                processors="tokenize,pos,constituency",
                tokenize_pretokenized=True,
                logging_level="WARN",
            )
        except Exception as exc:  # no internet and no cached model
            raise ConfigError(
                f"stanza's English constituency model is not available ({exc}); it downloads on first use "
                "with internet (stanza.download('en'))",
                field="constituency",
            ) from None

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]:
        if not docs:
            return []
        result = self.pipeline([[ptb_escape(t.text) for t in doc] for doc in docs])
        return [tree_spans(str(sentence.constituency)) for sentence in result.sentences]


def _tree_to_string(tree: Any) -> str:
    """nltk-style trees (benepar's output) as a bracketed string."""
    if hasattr(tree, "pformat"):
        return str(tree.pformat(margin=10**9))
    return str(tree)


def make_backend(name: str) -> ConstituencyBackend:
    """The constituency backend called ``name`` (see :data:`CONSTITUENCY_BACKENDS`)."""
    check_backend_name(name)
    if name == "derived":
        return DerivedBackend("flat")
    if name == "derived-xbar":
        return DerivedBackend("xbar")
    if name == "benepar":
        return BeneparBackend()
    if name == "stanza":
        return StanzaBackend()
    reasons = []
    for real in (BeneparBackend, StanzaBackend):  # auto
        try:
            return real()
        except ConfigError as exc:
            reasons.append(str(exc))
    fallback = DerivedBackend("flat")
    fallback.fallback_reason = "; ".join(reasons)
    logger.warning("constituency 'auto' FELL BACK to the tree derived from the dependency parse ('derived'): no "
                   "constituency parser loaded (%s)", fallback.fallback_reason)
    return fallback


def doc_heads(doc: Any) -> list[int]:
    """Head index per token, -1 for the root; the roots of later sentences hang on the first root."""
    heads = [t.head.i - doc[0].i if t.head.i != t.i else -1 for t in doc] if len(doc) else []
    roots = [i for i, h in enumerate(heads) if h < 0]
    for extra in roots[1:]:
        heads[extra] = roots[0]
    return heads
