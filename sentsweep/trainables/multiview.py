"""Multi-view structured contrastive learning as a trainable: config, :class:`MultiviewTask`, Ray and
standalone entries, and :func:`load_multiview_encoder` for saved models.

Training data (``corpus``): document-ordered corpora (``enwiki``, ``brown``, ``ptb-train``, or a file;
several joined by commas), parsed once (spaCy + the ``constituency`` backend) and cached. Batches are
``batch_size`` consecutive sentences of the document stream, never shuffled inside; the order of the
batches is shuffled each epoch. Loss: the two-matrix Quick-Thoughts objective
(:func:`~sentsweep.methods.multiview.objective.multiview_contrastive_loss`).
Dev selection: Spearman x100 of the cosine of ``[f; g]`` on SICK-R trial (``sickr_trial``) or STS-B dev
(``stsb_dev``) every ``eval_every`` steps. Final: SentEval transfer tasks and the STS suite
(``test_tasks``) on the best weights.

Defaults are the paper's (section 4.1): views (dep, const), Adam lr 5e-4, batch 400, gradient-norm clip
5, no dropout, Xavier init with zero biases, frozen GloVe vectors (offline: GloVe 6B 50-d; the paper:
840B 300-d), hidden 2400 per view (4800-d embeddings), and a constant learning rate (``lr_schedule:
constant``, as the paper keeps Adam's rate fixed; ``linear`` gives the shared loop's decay).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field, field_validator, model_validator

from sentsweep import data as datasets
from sentsweep.data.parsing import CONSTITUENCY_BACKENDS, Parser, parse_corpus
from sentsweep.errors import ConfigError, DataError
from sentsweep.evaluation import evaluate
from sentsweep.evaluation.sts import spearman
from sentsweep.methods.multiview.model import (
    MultiViewEncoder,
    MultiViewSettings,
    SentenceArrays,
    build_model,
)
from sentsweep.methods.multiview.objective import multiview_contrastive_loss, neighbour_accuracy
from sentsweep.methods.multiview.views import parse_view_pair
from sentsweep.methods.multiview.vocab import GLOVE_PACKAGE_NAMES, RANDOM_VECTORS
from sentsweep.trainables.base import Method, TrialConfig

#: Dev sets for model selection: name -> (loader name, split, metric key).
DEV_SETS: dict[str, tuple[str, str, str]] = {
    "sickr": ("sickr", "trial", "sickr_trial"),
    "stsb": ("stsb", "dev", "stsb_dev"),
}


class MultiviewConfig(TrialConfig):
    """A multi-view trial. Defaults: the paper's setting (see the module docstring)."""

    views: str = Field("dep+const", description="two of bow, seq, dep, const joined by '+' (unordered)")
    hidden_size: int = Field(2400, ge=2, description="per view; the embedding is [f; g], twice this")
    word_vectors: str = Field("glove-6b-50d", description="glove-6b-50d (offline), a GloVe text file, random")
    freeze_vectors: bool = True
    vocab_size: int = Field(50_000, ge=10, description="trainable vocabulary: most frequent corpus words")
    max_vectors: int | None = Field(None, ge=1, description="keep the first N rows of the vector file")
    word_dim: int = Field(300, ge=2, description="word-vector size for word_vectors: random")
    lowercase: bool | None = None
    corpus: str = "enwiki"
    max_sentences: int | None = Field(None, ge=2)
    constituency: str = "derived"
    spacy_model: str | None = None
    respect_documents: bool = True
    dev_data: Literal["sickr", "stsb"] = "sickr"
    encode_batch_size: int = Field(256, ge=1)
    senteval_kfold: int = Field(10, ge=2)
    senteval_inner_kfold: int | None = Field(None, ge=2)
    # the paper's optimisation instead of the shared defaults
    optimizer: Literal["adamw", "adam"] = "adam"
    lr: float = Field(5e-4, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    lr_schedule: Literal["linear", "constant"] = "constant"
    amp: bool = False  # fp32 as in the paper: the unnormalised 2400-d tree states overflow bf16/fp16
    max_grad_norm: float | None = 5.0
    batch_size: int = Field(400, ge=2)
    metric: str = "sickr_trial"
    eval_every: int = Field(500, gt=0)
    test_tasks: str = "senteval,sts"

    @field_validator("views")
    @classmethod
    def _views(cls, value: str) -> str:
        return "+".join(parse_view_pair(value))

    @field_validator("constituency")
    @classmethod
    def _constituency(cls, value: str) -> str:
        if value not in CONSTITUENCY_BACKENDS:
            raise ValueError(f"unknown backend '{value}'; known: {', '.join(CONSTITUENCY_BACKENDS)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MultiviewConfig:
        if self.freeze_vectors and self.word_vectors == "random":
            raise ValueError("random word vectors cannot be frozen: set freeze_vectors false")
        if "seq" in self.views.split("+") and self.hidden_size % 2:
            raise ValueError(
                f"the seq view needs an even hidden_size (two GRU directions), got {self.hidden_size}"
            )
        dev_metric = DEV_SETS[self.dev_data][2]
        if self.metric in ("sickr_trial", "stsb_dev") and self.metric != dev_metric:
            self.metric = dev_metric
        return self

    def vectors_source(self) -> str:
        """``word_vectors`` with a relative file path resolved against the cwd, else the data directory."""
        value = self.word_vectors
        if value in (*GLOVE_PACKAGE_NAMES, RANDOM_VECTORS) or Path(value).expanduser().is_absolute():
            return value
        if Path(value).is_file():
            return str(Path(value).resolve())
        under_data = datasets.resolve_data_dir(self.data_dir).path(value)
        return str(under_data) if under_data.is_file() else value

    def settings(self) -> MultiViewSettings:
        return MultiViewSettings(
            views=parse_view_pair(self.views),
            hidden_size=self.hidden_size,
            word_vectors=self.vectors_source(),
            freeze_vectors=self.freeze_vectors,
            vocab_size=self.vocab_size,
            max_vectors=self.max_vectors,
            word_dim=self.word_dim,
            lowercase=self.lowercase,
            constituency=self.constituency,
            spacy_model=self.spacy_model,
        )


def make_parser(settings: MultiViewSettings) -> Parser:
    """The parser a model was trained with: tokens only unless a tree view is used."""
    return Parser(settings.constituency, settings.spacy_model, trees=settings.needs_trees)


def load_corpus(config: MultiviewConfig) -> list[datasets.Document]:
    """The training documents in reading order (several corpora joined by commas), cut at max_sentences."""
    documents = [
        doc
        for name in (n.strip() for n in config.corpus.split(",") if n.strip())
        for doc in datasets.corpus(name, data_dir=config.data_dir)
    ]
    if config.max_sentences is not None:
        kept, left = [], config.max_sentences
        for doc in documents:
            if left <= 0:
                break
            kept.append(datasets.Document(doc.title, doc.sentences[:left]))
            left -= len(kept[-1].sentences)
        documents = kept
    return [d for d in documents if d.sentences]


class MultiviewTask:
    """Multi-view Quick-Thoughts on an ordered corpus, for the shared
    :class:`~sentsweep.trainables.loop.TrainingLoop`."""

    def __init__(self, config: MultiviewConfig) -> None:
        self.config = config
        settings = config.settings()
        self.parser = make_parser(settings)
        documents = load_corpus(config)
        parsed = parse_corpus(documents, self.parser)
        sentences = list(parsed.sentences())
        if len(sentences) < 2:
            raise ConfigError(f"corpus '{config.corpus}' gives fewer than two sentences", field="corpus")
        counts = Counter(t for s in sentences for t in s.tokens) if not settings.freeze_vectors else None
        model, vocab = build_model(settings, counts, seed=config.seed)
        settings.parser_backend = parsed.backend_id
        device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(device)
        self.encoder = MultiViewEncoder(model, vocab, self.parser, batch_size=config.encode_batch_size)
        self.items: list[SentenceArrays] = self.encoder.prepare(sentences)
        self.segments = torch.from_numpy(
            np.repeat(np.arange(len(parsed.documents)), [len(d) for d in parsed.documents])
        )
        name, split, self.dev_key = DEV_SETS[config.dev_data]
        dev = datasets.scored_pairs(name, split, data_dir=config.data_dir)
        self.dev = dev[: config.max_dev_pairs] if config.max_dev_pairs else dev

    # -- TrainTask ---------------------------------------------------------------------------------
    def batches(self, epoch: int, generator: torch.Generator) -> list[tuple[int, int]]:
        """``(start, end)`` runs of ``batch_size`` consecutive sentences (a last run of >= 2 kept), in a
        shuffled order; the sentences inside a run keep their reading order."""
        size, n = self.config.batch_size, len(self.items)
        runs = [(s, min(n, s + size)) for s in range(0, n, size) if min(n, s + size) - s >= 2]
        order = torch.randperm(len(runs), generator=generator).tolist()
        return [runs[i] for i in order]

    def loss(self, batch: tuple[int, int]) -> tuple[torch.Tensor, dict[str, float]]:
        start, end = batch
        f, g = self.model(self.encoder.inputs(self.items[start:end]))
        segments = self.segments[start:end].to(f.device) if self.config.respect_documents else None
        value = multiview_contrastive_loss(f, g, segments)
        return value, {"neighbour_acc": 100.0 * neighbour_accuracy(f.detach(), g.detach(), segments)}

    def evaluate(self) -> dict[str, float]:
        sentences = list(dict.fromkeys(s for p in self.dev for s in (p.s1, p.s2)))
        vectors = dict(zip(sentences, self.encoder.encode(sentences), strict=True))
        cos = []
        for p in self.dev:
            a, b = vectors[p.s1], vectors[p.s2]
            cos.append(float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12)))
        return {self.dev_key: spearman(cos, [p.score for p in self.dev])}

    def save(self, directory: Path) -> None:
        self.encoder.save(directory)

    def load(self, directory: Path) -> None:
        self.encoder.load_weights(directory)


def final_evaluation(task: MultiviewTask, config: TrialConfig) -> dict[str, float]:
    """The best weights on ``test_tasks`` (SentEval with ``senteval_kfold`` folds, and STS)."""
    assert isinstance(config, MultiviewConfig)
    result = evaluate(
        task.encoder,
        config.test_tasks,
        data_dir=config.data_dir,
        kfold=config.senteval_kfold,
        inner_kfold=config.senteval_inner_kfold,
        batch_size=config.encode_batch_size,
    )
    return dict(result.metrics)


def build_task(config: TrialConfig) -> MultiviewTask:
    if not isinstance(config, MultiviewConfig):
        raise TypeError(f"the multi-view method needs a MultiviewConfig, got {type(config).__name__}")
    return MultiviewTask(config)


MULTIVIEW = Method("multiview", MultiviewConfig, build_task, final_evaluation)


def train_multiview(config: dict[str, Any]) -> None:
    """Ray Tune function trainable: reports with checkpoints, restores from ``tune.get_checkpoint()``."""
    MULTIVIEW.train_ray(config)


def load_multiview_encoder(
    directory: str | Path, device: str | None = None, batch_size: int = 256
) -> MultiViewEncoder:
    """A saved multi-view model (a run's ``best/`` folder or a checkpoint's ``model/``) as an Embedder."""
    directory = Path(directory)
    for candidate in (directory, directory / "best", directory / "model"):
        if (candidate / "multiview.json").is_file():
            return MultiViewEncoder.load(candidate, make_parser, device=device, batch_size=batch_size)
    raise DataError(
        "not a multi-view model folder (no multiview.json here, in best/ or model/)", file=directory
    )
