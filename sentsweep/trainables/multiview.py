"""Multi-view structured contrastive learning as a method: :class:`MultiviewConfig`,
:class:`MultiviewTask` for the shared loop, :class:`MultiviewMethod` (with the loader of saved models).

Training data (``corpus``): document-ordered corpora (``enwiki``, ``brown``, ``ptb-train``, or a file;
several joined by commas), parsed once (spaCy + the ``constituency`` backend) and cached. Batches are
``batch_size`` consecutive sentences of the document stream, never shuffled inside; the order of the
batches is shuffled each epoch. Loss: the two-matrix Quick-Thoughts objective
(:func:`~sentsweep.methods.multiview.objective.multiview_contrastive_loss`).
Dev selection: Spearman x100 of the cosine of ``[f; g]`` on STS-B dev (``stsb_dev``, the default: the other
methods' rule, as the paper names no selection set) or SICK-R trial (``sickr_trial``) every ``eval_every`` steps.
Final: SentEval transfer tasks and the STS suite (``test_tasks``) on the best weights.

Defaults are the paper's (section 4.1): views (dep, const), Adam lr 5e-4, batch 400, gradient-norm clip
5, no dropout, Xavier init with zero biases, frozen GloVe vectors (offline: GloVe 6B 50-d; the paper:
840B 300-d), hidden 2400 per view (4800-d embeddings). The paper names no learning-rate schedule; the default
keeps Adam's rate constant (``lr_schedule: constant``; ``linear`` gives the shared loop's decay).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import BeforeValidator, Field, PlainSerializer, field_validator, model_validator

from sentsweep import data as datasets
from sentsweep.data.parsing import CONSTITUENCY_BACKENDS, Parser, parse_corpus
from sentsweep.errors import ConfigError
from sentsweep.evaluation import evaluate
from sentsweep.methods.multiview.encoder import MultiViewEncoder
from sentsweep.methods.multiview.model import (
    SETTINGS_FILE,
    MultiViewSettings,
    SentenceArrays,
    build_model,
    constituency_metrics,
    record_parser,
)
from sentsweep.methods.multiview.objective import multiview_contrastive_loss, neighbour_accuracy
from sentsweep.methods.multiview.views import ViewPair, parse_view_pair
from sentsweep.methods.multiview.vocab import GLOVE_PACKAGE_NAMES, RANDOM_VECTORS
from sentsweep.trainables.checkpoints import MODEL_DIR, StoredFolder
from sentsweep.trainables.method import Method
from sentsweep.trainables.trial_config import TrialConfig

logger = logging.getLogger(__name__)

#: A view pair in a config: written ``"dep+const"`` (YAML, search spaces, logged params), parsed once
#: into a :class:`ViewPair` that the model receives as is.
ViewPairField = Annotated[ViewPair, BeforeValidator(parse_view_pair), PlainSerializer(str, return_type=str)]


class MultiviewConfig(TrialConfig):
    """A multi-view trial. Defaults: the paper's setting (see the module docstring)."""

    views: ViewPairField = Field(ViewPair("dep", "const"),
                                 description="two of bow, seq, dep, const joined by '+' (unordered)")
    hidden_size: int = Field(2400, ge=2, description="per view; the embedding is [f; g], twice this")
    word_vectors: str = Field("glove-6b-50d", description="glove-6b-50d (offline), a GloVe text file, random")
    freeze_vectors: bool = Field(True, description="keep the pretrained word vectors fixed")
    vocab_size: int = Field(50_000, ge=10, description="trainable vocabulary: most frequent corpus words")
    max_vectors: int | None = Field(None, ge=1, description="keep the first N rows of the vector file")
    word_dim: int = Field(300, ge=2, description="width of a Xavier-initialised trainable table")
    trainable_init: str = Field(
        "xavier", description="a trainable table's start: xavier (the paper's; word_vectors then serve the vocabulary "
        "expansion only) or vectors (word_vectors where they have the word, their width)")
    lowercase: bool | None = Field(None, description="lowercase words before lookup (null: when the word vectors "
                                   "are uncased, or there are none)")
    corpus: str = Field("enwiki", description="registered corpora of the data directory (enwiki, brown, ptb-train, "
                        "ptb-valid, ptb-test), prepared:NAME or text files, comma-separated; a file is read as "
                        "titled documents (blank lines between documents, a '# ' line opening one is its title)")
    max_sentences: int | None = Field(None, ge=2, description="train on the corpus's first N sentences (null: all)")
    constituency: str = Field("derived", description="constituency trees: derived (from the dependency parse), "
                              "derived-xbar, benepar, stanza, or auto (a parser when installed)")
    spacy_model: str | None = Field(None, description="the spaCy pipeline that parses the corpus (null: the first "
                                    "one installed)")
    respect_documents: bool = Field(True, description="neighbouring sentences across a document boundary are not "
                                    "positives")
    dev_data: Literal["stsb", "sickr"] = Field("stsb", description="dev set of model selection (STS-B dev or SICK-R "
                                               "trial; the paper names none)")
    encode_batch_size: int = Field(256, ge=1, description="sentences per batch when encoding for evaluation")
    # the paper's optimisation instead of the shared defaults
    optimizer: Literal["adamw", "adam"] = "adam"
    lr: float = Field(5e-4, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    lr_schedule: Literal["linear", "constant"] = "constant"
    amp: bool = False  # fp32 as in the paper: the unnormalised 2400-d tree states overflow bf16/fp16
    max_grad_norm: float | None = 5.0
    batch_size: int = Field(400, ge=2)
    eval_every: int = Field(500, gt=0)
    test_tasks: str = "senteval,sts"

    @field_validator("constituency")
    @classmethod
    def _constituency(cls, value: str) -> str:
        if value not in CONSTITUENCY_BACKENDS:
            raise ValueError(f"unknown backend '{value}'; known: {', '.join(CONSTITUENCY_BACKENDS)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MultiviewConfig:
        """The model's invariants, checked where the model defines them (:class:`MultiViewSettings`)."""
        self.settings(self.word_vectors)
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

    def settings(self, word_vectors: str | None = None) -> MultiViewSettings:
        """The model's settings (``word_vectors``: the resolved :meth:`vectors_source` unless given)."""
        return MultiViewSettings(
            views=self.views,
            hidden_size=self.hidden_size,
            word_vectors=word_vectors or self.vectors_source(),
            freeze_vectors=self.freeze_vectors,
            vocab_size=self.vocab_size,
            max_vectors=self.max_vectors,
            word_dim=self.word_dim,
            trainable_init=self.trainable_init,
            lowercase=self.lowercase,
            constituency=self.constituency,
            spacy_model=self.spacy_model,
        )


def make_parser(settings: MultiViewSettings) -> Parser:
    """The parser a model was trained with: tokens only unless a tree view is used."""
    return Parser(settings.constituency, settings.spacy_model, trees=settings.needs_trees)


def load_corpus(config: MultiviewConfig) -> list[datasets.Document]:
    """The training documents in reading order (several corpora joined by commas), cut at max_sentences."""
    return datasets.training_documents(config.corpus, config.data_dir, config.max_sentences)


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
        record_parser(settings, self.parser)
        device = config.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(device)
        self.encoder = MultiViewEncoder(model, vocab, self.parser, batch_size=config.encode_batch_size)
        self.items: list[SentenceArrays] = self.encoder.prepare(sentences)
        self.segments = torch.from_numpy(
            np.repeat(np.arange(len(parsed.documents)), [len(d) for d in parsed.documents])
        )
        self.dev = config.dev_evaluator(config.encode_batch_size)

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
        """Spearman x100 of the cosine of ``[f; g]`` on the dev set."""
        return dict(self.dev(self.encoder).metrics)

    def save(self, directory: Path) -> None:
        self.encoder.save(directory)

    def load(self, directory: Path) -> None:
        self.encoder.load_weights(directory)


class MultiviewMethod(Method[MultiviewConfig, MultiviewTask]):
    """Multi-view structured contrastive learning: two views of a sentence, Quick-Thoughts objective."""

    name = "multiview"
    config_cls = MultiviewConfig
    saved_marker: ClassVar[str | None] = SETTINGS_FILE

    def build_task(self, config: MultiviewConfig) -> MultiviewTask:
        return MultiviewTask(config)

    def resumed_config(self, config: MultiviewConfig, checkpoints: Sequence[StoredFolder]) -> MultiviewConfig:
        """A trial whose checkpoint was written before ``trainable_init`` existed (its tables started from the word
        vectors, as wide as they are) continues so, unless its config sets ``trainable_init`` itself: a sweep
        resumed across the upgrade restores its trials, and the trial goes on with the model it started."""
        if "trainable_init" in config.model_fields_set:
            return config
        for checkpoint in checkpoints:
            saved = checkpoint.child(MODEL_DIR).read_json(SETTINGS_FILE)
            if saved is None:
                continue
            started = MultiViewSettings.from_saved(saved).trainable_init
            if started != config.trainable_init:
                logger.warning("checkpoint %s was written with trainable_init '%s': the trial continues with it",
                               checkpoint.name, started)
                return config.model_copy(update={"trainable_init": started})
            return config
        return config

    def final_evaluation(self, task: MultiviewTask, config: MultiviewConfig) -> dict[str, float]:
        """The best weights on ``test_tasks`` (SentEval with the ``senteval_*`` options, and STS)."""
        result = evaluate(
            task.encoder,
            config.test_tasks,
            data_dir=config.data_dir,
            batch_size=config.encode_batch_size,
            **config.senteval_options(),
        )
        return {**result.metrics, **constituency_metrics(task.encoder.settings)}

    def load_encoder(self, folder: Path, device: str | None = None, **settings: Any) -> MultiViewEncoder:
        """A saved multi-view model, with the parser it was trained with."""
        self.refuse_settings(settings)
        return MultiViewEncoder.load(folder, make_parser, device=device)


MULTIVIEW = MultiviewMethod()
