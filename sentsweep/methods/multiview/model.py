"""The multi-view sentence encoder: two views f and g over shared or per-view word vectors.

:class:`MultiViewModel` is the ``nn.Module`` (training: ``forward(inputs) -> (f, g)``);
:class:`~sentsweep.methods.multiview.encoder.MultiViewEncoder` wraps it with a parser and a vocabulary
as an ``Embedder``.

Parsing is injected (anything with ``parse(list[str]) -> parsed sentences``; see
:class:`SentenceParser`), so this module needs neither spaCy nor the data package.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor, nn

from sentsweep.methods.multiview.trees import collate_binary, collate_dependency
from sentsweep.methods.multiview.views import TREE_VIEWS, ViewInputs, ViewPair, build_view, parse_view_pair
from sentsweep.methods.multiview.vocab import (
    RANDOM_VECTORS,
    Vocabulary,
    embedding_matrix,
    frozen_vocabulary,
    load_word_vectors,
)

logger = logging.getLogger(__name__)
SETTINGS_FILE = "multiview.json"
WEIGHTS_FILE = "model.safetensors"
VOCAB_FILE = "vocab.txt"
FROZEN_KEY = "frozen.weight"
#: How a trainable vocabulary's tables start (:attr:`MultiViewSettings.trainable_init`).
TRAINABLE_INITS: tuple[str, ...] = ("xavier", "vectors")


class BinaryLike(Protocol):
    n: int
    left: Sequence[int]
    right: Sequence[int]


class ParsedLike(Protocol):
    """What the views need from a parsed sentence (``sentsweep.data.parsing.ParsedSentence``)."""

    tokens: Sequence[str]
    heads: Sequence[int]

    def binarized(self) -> BinaryLike: ...


class SentenceParser(Protocol):
    def parse(self, sentences: Sequence[str]) -> Sequence[ParsedLike]: ...


class BackendLike(Protocol):
    name: str


class RecordingParser(Protocol):
    """What :func:`record_parser` reads (``sentsweep.data.parsing.Parser``)."""

    constituency: str
    trees: bool

    @property
    def backend_id(self) -> str: ...

    @property
    def backend(self) -> BackendLike: ...


@dataclass
class MultiViewSettings:
    """Everything needed to rebuild an encoder (saved as ``multiview.json`` next to the weights).

    The one place of the model's invariants (the trainable's config validates through it): frozen
    vectors are not random, and the ``seq`` view has an even ``hidden_size`` (two GRU directions).
    ``views`` is a :class:`ViewPair` (the trainable's config passes the one it parsed; names or
    ``"dep+const"`` given directly are parsed here).
    """

    views: ViewPair
    hidden_size: int = 2400
    word_vectors: str = "glove-6b-50d"
    freeze_vectors: bool = True
    vocab_size: int = 50_000
    max_vectors: int | None = None
    word_dim: int = 300
    lowercase: bool | None = None
    constituency: str = "derived"
    spacy_model: str | None = None
    #: The parser that really ran (spaCy model, constituency backend, versions), set by :func:`record_parser`.
    parser_backend: str | None = None
    #: True when ``constituency: auto`` found no constituency parser and used the dependency-derived tree.
    constituency_fallback: bool = False
    #: A trainable vocabulary's unknown words get ``W x + b`` of their frozen vector at inference
    #: (:class:`~sentsweep.methods.multiview.vocab.VocabularyExpansion`, the paper's section 4.1).
    expand_vocabulary: bool = True
    #: How a trainable table starts (:data:`TRAINABLE_INITS`): ``xavier`` as the paper (section 4.1: "initialized
    #: with a Xavier distribution"), ``word_dim`` wide, the word vectors serving only the expansion; ``vectors``: the
    #: word vectors where they have the word (Xavier elsewhere), as wide as they are.
    trainable_init: str = "xavier"

    def __post_init__(self) -> None:
        if not isinstance(self.views, ViewPair):  # direct use (not through the trainable's config)
            self.views = parse_view_pair(self.views if isinstance(self.views, str) else "+".join(self.views))
        if self.freeze_vectors and self.word_vectors == RANDOM_VECTORS:
            raise ValueError("random word vectors cannot be frozen: set freeze_vectors false")
        if self.trainable_init not in TRAINABLE_INITS:
            raise ValueError(f"trainable_init must be one of {', '.join(TRAINABLE_INITS)}, got '{self.trainable_init}'")
        if self.trainable_init == "vectors" and self.word_vectors == RANDOM_VECTORS:
            raise ValueError("trainable_init 'vectors' needs word vectors (word_vectors is random): use xavier")
        if "seq" in self.views and self.hidden_size % 2:
            raise ValueError(f"the seq view needs an even hidden_size, got {self.hidden_size}")

    @property
    def needs_dep(self) -> bool:
        return "dep" in self.views

    @property
    def needs_const(self) -> bool:
        return "const" in self.views

    @property
    def needs_trees(self) -> bool:
        return bool(TREE_VIEWS & set(self.views))

    @property
    def name(self) -> str:
        return str(self.views)

    def table_dim(self, vectors_dim: int | None) -> int:
        """The width of a trainable table: the word vectors' (``vectors_dim``) when it starts from them, else
        ``word_dim``."""
        return vectors_dim if self.trainable_init == "vectors" and vectors_dim is not None else self.word_dim

    @classmethod
    def from_saved(cls, raw: dict[str, Any]) -> MultiViewSettings:
        """Settings read from ``multiview.json``; one written before ``trainable_init`` existed started its trainable
        tables from the word vectors when it had any (and is as wide as they are)."""
        raw = dict(raw)
        raw.setdefault("trainable_init", "vectors" if raw.get("word_vectors") != RANDOM_VECTORS else "xavier")
        return cls(**raw)

    @property
    def expands_vocabulary(self) -> bool:
        """Whether inference expands the vocabulary: a trainable vocabulary with vectors to map from."""
        return self.expand_vocabulary and not self.freeze_vectors and self.word_vectors != RANDOM_VECTORS


@dataclass(frozen=True)
class SentenceArrays:
    """One sentence ready for collation: word ids, dependency heads, binarised tree (when needed)."""

    ids: np.ndarray
    heads: np.ndarray | None = None
    binary: tuple[int, np.ndarray, np.ndarray] | None = None


def prepare(parsed: ParsedLike, vocab: Vocabulary, dep: bool, const: bool) -> SentenceArrays:
    """Word ids and, for the tree views, the arrays :mod:`~sentsweep.methods.multiview.trees` batches."""
    heads = np.asarray(parsed.heads, dtype=np.int64) if dep else None
    binary = None
    if const:
        tree = parsed.binarized()
        binary = (int(tree.n), np.asarray(tree.left, dtype=np.int64), np.asarray(tree.right, dtype=np.int64))
    return SentenceArrays(vocab.ids(parsed.tokens), heads, binary)


def collate(items: Sequence[SentenceArrays], dep: bool, const: bool) -> ViewInputs:
    """Flat tokens of a batch of sentences plus the batched trees the views need."""
    lengths = np.fromiter((len(s.ids) for s in items), dtype=np.int64, count=len(items))
    sentence = np.repeat(np.arange(len(items)), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    position = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    return ViewInputs(
        word_ids=torch.from_numpy(np.concatenate([s.ids for s in items])),
        sentence=torch.from_numpy(sentence),
        position=torch.from_numpy(position),
        lengths=torch.from_numpy(lengths),
        dep=collate_dependency([s.heads for s in items]) if dep else None,  # type: ignore[misc]
        const=collate_binary([s.binary for s in items]) if const else None,  # type: ignore[misc]
    )


def record_parser(settings: MultiViewSettings, parser: RecordingParser) -> None:
    """Record in ``settings`` (saved with the model) the parser that really ran, and whether
    ``constituency: auto`` fell back to the tree derived from the dependency parse.

    The fallback is logged as a warning by the backend itself when it happens
    (:func:`sentsweep.data.parsing.make_backend`); here it is warned again, naming the model's views, so
    that a run whose ``const`` view was trained on derived trees says so in its own log too.
    """
    settings.parser_backend = parser.backend_id
    settings.constituency_fallback = bool(
        parser.trees and parser.constituency == "auto" and parser.backend.name.startswith("derived")
    )
    if settings.constituency_fallback:
        logger.warning(
            "multi-view %s: constituency 'auto' used the dependency-derived tree (%s), not a constituency "
            "parser; name a parser (constituency: benepar or stanza) to reproduce the paper", settings.name,
            settings.parser_backend)


def constituency_metrics(settings: MultiViewSettings) -> dict[str, float]:
    """``constituency_fallback`` (1.0 when ``auto`` fell back to the derived tree, else 0.0), for a run's metrics."""
    return {"constituency_fallback": float(settings.constituency_fallback)}


def xavier_init(module: nn.Module) -> None:
    """The paper's initialisation: Xavier-uniform weight matrices, zero biases (vectors untouched)."""
    for name, param in module.named_parameters():
        if param.ndim >= 2:
            nn.init.xavier_uniform_(param)
        else:
            nn.init.zeros_(param)
        del name


class MultiViewModel(nn.Module):
    """Views f and g (``settings.views``) over word vectors: frozen and shared, or one table per view."""

    def __init__(self, settings: MultiViewSettings, vocab_size: int, word_dim: int) -> None:
        super().__init__()
        self.settings = settings
        if settings.freeze_vectors:
            self.frozen = nn.Embedding(vocab_size, word_dim, padding_idx=0)
            self.frozen.weight.requires_grad_(False)
            self.embed_f: nn.Embedding | None = None
            self.embed_g: nn.Embedding | None = None
        else:
            self.frozen = None
            self.embed_f = nn.Embedding(vocab_size, word_dim, padding_idx=0)
            self.embed_g = nn.Embedding(vocab_size, word_dim, padding_idx=0)
        self.f = build_view(settings.views[0], word_dim, settings.hidden_size)
        self.g = build_view(settings.views[1], word_dim, settings.hidden_size)
        xavier_init(self.f)
        xavier_init(self.g)

    @property
    def dim(self) -> int:
        return 2 * self.settings.hidden_size

    def forward(self, inputs: ViewInputs, extra: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """``(f, g)``; ``extra``: rows for the ids past the trainable tables (vocabulary expansion), per view."""
        if self.frozen is not None:
            vf = vg = self.frozen(inputs.word_ids)
        else:
            assert self.embed_f is not None and self.embed_g is not None
            if extra is None:
                vf, vg = self.embed_f(inputs.word_ids), self.embed_g(inputs.word_ids)
            else:
                vf = torch.cat([self.embed_f.weight, extra[0]])[inputs.word_ids]
                vg = torch.cat([self.embed_g.weight, extra[1]])[inputs.word_ids]
        return self.f(vf, inputs), self.g(vg, inputs)

    def trainable_state(self) -> dict[str, Tensor]:
        """The weights to save: everything but the frozen vectors (reloaded from their source)."""
        return {k: v for k, v in self.state_dict().items() if k != FROZEN_KEY}


def build_model(
    settings: MultiViewSettings, token_counts: Counter[str] | None = None, seed: int = 0
) -> tuple[MultiViewModel, Vocabulary]:
    """A freshly initialised model and its vocabulary.

    Frozen vectors: the vector file's vocabulary. Trainable: the ``vocab_size`` most frequent words of
    ``token_counts`` (the training corpus), each view's table Xavier-initialised (``trainable_init: xavier``, the
    paper's), or from the word vectors where they have the word (``vectors``; Xavier elsewhere).
    """
    with torch.random.fork_rng(devices=[]):  # seeded init without touching the caller's generator
        torch.manual_seed(seed)
        return _build_model(settings, token_counts, np.random.default_rng(seed))


def _build_model(
    settings: MultiViewSettings, token_counts: Counter[str] | None, rng: np.random.Generator
) -> tuple[MultiViewModel, Vocabulary]:
    vectors = (
        None
        if settings.word_vectors == RANDOM_VECTORS
        else load_word_vectors(settings.word_vectors, settings.max_vectors)
    )
    if settings.lowercase is None:
        settings.lowercase = vectors.uncased if vectors is not None else True
    if settings.freeze_vectors:
        assert vectors is not None
        vocab, matrix = frozen_vocabulary(settings.word_vectors, settings.max_vectors)
        vocab = vocab.cased_as(settings.lowercase)
        model = MultiViewModel(settings, len(vocab), vectors.dim)
        assert model.frozen is not None
        model.frozen.weight.data.copy_(torch.from_numpy(matrix))
        return model, vocab
    if token_counts is None:
        raise ValueError("a trainable vocabulary is built from the training corpus's token counts")
    vocab = Vocabulary.from_counts(token_counts, settings.vocab_size, settings.lowercase)
    model = MultiViewModel(settings, len(vocab), settings.table_dim(vectors.dim if vectors is not None else None))
    for table in (model.embed_f, model.embed_g):
        assert table is not None
        if vectors is not None and settings.trainable_init == "vectors":
            table.weight.data.copy_(torch.from_numpy(embedding_matrix(vocab, vectors, rng)))
        else:
            nn.init.xavier_uniform_(table.weight)
            table.weight.data[0] = 0.0
    return model, vocab
