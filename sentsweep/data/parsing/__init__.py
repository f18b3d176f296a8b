"""Sentence parsing for the multi-view method: spaCy dependencies, constituency backends, disk caches.

Every sentence becomes a :class:`ParsedSentence`: spaCy's tokens, a dependency tree (one head per token)
and unlabelled constituents (spans over >= 2 tokens). The package, by concern:

- :mod:`~sentsweep.data.parsing.spans`: the parsed sentence and its geometry (laminar spans,
  left-markovised binarisation for the binary Tree-LSTM, spans derived from dependencies, tree heights);
- :mod:`~sentsweep.data.parsing.backends`: the constituency backends (``benepar``, ``stanza``, the
  offline ``derived`` / ``derived-xbar``, and ``auto``);
- :mod:`~sentsweep.data.parsing.store`: single parsed sentences in SQLite, keyed by content hash;
- :mod:`~sentsweep.data.parsing.parser`: :class:`Parser`, spaCy (loaded by
  :mod:`sentsweep.data.spacy_models`) plus a backend, with its caches; :attr:`Parser.backend_id` records
  the backend that really ran;
- :mod:`~sentsweep.data.parsing.corpus`: whole corpora parsed and cached in one file
  (:mod:`sentsweep.data.cache`: locked, atomic), and their statistics;
- :mod:`~sentsweep.data.parsing.scoring`: a backend's bracket F1 against gold PTB trees (the scoring
  itself is :mod:`sentsweep.data.treebank`).

>>> parser = Parser("derived")                            # doctest: +SKIP
>>> parsed = parser.parse(["The cat sat on the mat."])[0]  # doctest: +SKIP
>>> parsed.tokens, parsed.heads                           # doctest: +SKIP
(('The', 'cat', 'sat', 'on', 'the', 'mat', '.'), (1, 2, -1, 2, 5, 3, 2))
"""

from __future__ import annotations

from sentsweep.data.parsing.backends import (
    CONSTITUENCY_BACKENDS,
    BeneparBackend,
    ConstituencyBackend,
    DerivedBackend,
    StanzaBackend,
    doc_heads,
    make_backend,
    tree_spans,
)
from sentsweep.data.parsing.corpus import ParsedCorpus, corpus_hash, corpus_stats, parse_corpus
from sentsweep.data.parsing.parser import Parser, ProgressFn
from sentsweep.data.parsing.scoring import evaluate_on_treebank
from sentsweep.data.parsing.spans import (
    EMPTY_TOKEN,
    PARSING_VERSION,
    BinaryTree,
    ParsedSentence,
    Span,
    binarize,
    binary_levels,
    dependency_levels,
    dependency_spans,
    laminar,
)
from sentsweep.data.parsing.store import TreeStore
from sentsweep.data.spacy_models import SPACY_MODELS

__all__ = [
    "CONSTITUENCY_BACKENDS",
    "EMPTY_TOKEN",
    "PARSING_VERSION",
    "SPACY_MODELS",
    "BeneparBackend",
    "BinaryTree",
    "ConstituencyBackend",
    "DerivedBackend",
    "ParsedCorpus",
    "ParsedSentence",
    "Parser",
    "ProgressFn",
    "Span",
    "StanzaBackend",
    "TreeStore",
    "binarize",
    "binary_levels",
    "corpus_hash",
    "corpus_stats",
    "dependency_levels",
    "dependency_spans",
    "doc_heads",
    "evaluate_on_treebank",
    "laminar",
    "make_backend",
    "parse_corpus",
    "tree_spans",
]
