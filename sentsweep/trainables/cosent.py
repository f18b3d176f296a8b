"""CoSENT as a method: :class:`CosentConfig`, :class:`CosentTask` for the shared loop, :class:`CosentMethod`.

Training data (``train_data``): ``stsb`` (scores 0-5), ``sickr`` (1-5), ``snli`` (NLI labels,
contradiction < neutral < entailment; offline only dev/test exist, so ``train_split`` defaults to
``train`` and must be set to ``dev`` for offline runs), ``mrpc`` (binary), or ``prepared:NAME``: scored pairs of
your own (``sentsweep data prepare NAME --kind scored-pairs``), whose score range comes with them. The loss is
CoSENT (eq. 10) or one of the paper's baselines (``loss``); ``architecture: cross`` trains the cross-encoder with
eq. 11, ``scale`` (lambda) multiplying its raw scores as the equation writes it; it reads the [CLS] state, so
``pooling`` is refused with it. Dev selection: Spearman x100 on
``dev_data`` (STS-B dev by default; ``nli``: SNLI dev against its labels, as the reference selects its NLI transfer)
every ``eval_every`` steps; a dev set that is the training split is refused, and so is a training split whose
test figures the final suite reports (``stsb`` ``test`` with ``test_tasks: sts``: test leakage).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field, ValidationInfo, field_validator, model_validator
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sentsweep import data as datasets
from sentsweep.data.prepared import PreparedScoredPairs, is_prepared_ref
from sentsweep.data.registry import PREPARED_PREFIX
from sentsweep.errors import ConfigError
from sentsweep.evaluation import evaluate
from sentsweep.evaluation.metric_names import task_data_splits
from sentsweep.evaluation.protocols import Embedder
from sentsweep.evaluation.sts import StsEvaluator, sample_indices
from sentsweep.evaluation.suite import scored_test_splits
from sentsweep.methods.cosent import create_loss, cross_encoder_cosent_loss, label_midpoint, loss_parameters
from sentsweep.methods.cosent.model import HEAD_FILE, BiEncoder, CrossEncoder
from sentsweep.methods.cosent.pooling import model_type, nli_pooling
from sentsweep.methods.encoders import ENCODER_CONFIG_FILE, EncoderSettings, TransformerEncoder, with_eval_max_length
from sentsweep.trainables.method import Method
from sentsweep.trainables.trial_config import DEV_SETS, EvalMaxLength, TrialConfig

logger = logging.getLogger(__name__)
LOSS_HEAD_FILE = "loss_head.safetensors"

#: Per training set: (loader kind, label_min, label_max, number of classes or None for graded scores). The label
#: range is what the MSE baseline maps onto cosine [0, 1], as the CoSENT reference does (``utils.py``: STS-B and
#: SICK scores / 5, so SICK's 1..5 become 0.2..1.0; NLI / 2).
TRAIN_SETS: dict[str, tuple[str, float, float, int | None]] = {
    "stsb": ("scored", 0.0, 5.0, None),
    "sickr": ("scored", 0.0, 5.0, None),
    "snli": ("labelled", 0.0, 2.0, 3),
    "mrpc": ("labelled", 0.0, 1.0, 2),
}
#: The label above which a pair counts as positive for the contrastive baselines, where it is not the middle of the
#: label range: SICK's 1..5 scale, split at 3.0 as the reference does (``relatedness_score > 3.0``).
POSITIVE_THRESHOLDS: dict[str, float] = {"sickr": 3.0}
#: Sentences per encoder call when scoring the dev set.
DEV_BATCH_SIZE = 128
#: The cross-encoder's test sets (it scores pairs, so the embedding suites do not apply).
CROSS_TEST_TASKS = "stsb_test,sickr_test"

#: The paper's NLI training setting (section 4), applied to the fields a config leaves unset.
NLI_DEFAULTS: dict[str, float | int] = {"batch_size": 64, "max_length": 128, "epochs": 1.0}
#: The bi-encoder's pooling outside the NLI setting (section 4.1: "mean pooling ... for other tasks").
DEFAULT_POOLING = "mean"


#: The losses' own settings (each loss takes its own: :func:`~sentsweep.methods.cosent.loss_parameters`).
LOSS_SETTINGS = ("scale", "epsilon", "margin")
#: The contrastive and triplet baselines' other settings: a warning names one set under a loss that does not take it
#: (:meth:`~sentsweep.trainables.trial_config.TrialConfig.warn_unused`), as for :data:`LOSS_SETTINGS`.
BASELINE_SETTINGS = ("distance", "mining", "positive_threshold")

class CosentConfig(TrialConfig):
    """A CoSENT trial. Defaults: the paper's (lambda 20, mean pooling, lr 2e-5, warmup 10%, and for STS-type
    data batch 16, max length 64, 4 epochs; with ``train_data: snli`` the unset ones become the paper's NLI
    setting: batch 64, max length 128, 1 epoch, and pooling by the model config's family: first_last for BERT,
    cls for RoBERTa, :func:`~sentsweep.methods.cosent.pooling.nli_pooling`). ``pooling`` is the bi-encoder's
    (section 4.1); the cross-encoder (eq. 11) scores the [CLS] state, so it keeps ``pooling`` None and refuses
    one that is set."""

    epochs: float = Field(4.0, gt=0)
    architecture: Literal["bi", "cross"] = Field("bi", description="bi: a bi-encoder scoring cosines (eq. 10); cross: "
                                                                    "a cross-encoder scoring pairs (eq. 11)")
    eval_max_length: EvalMaxLength = None
    pooling: Literal["cls", "mean", "max", "first_last"] | None = Field(
        None, description="bi-encoder only; unset: mean, or the NLI setting's by model family")
    loss: Literal["cosent", "mse", "softmax", "contrastive", "triplet"] = Field("cosent", description=
        "cosent, or a baseline: mse, softmax (class labels), contrastive (eq. 2), triplet")
    scale: float = Field(20.0, gt=0, description="CoSENT's lambda: the scale of the cosine differences (eq. 10)")
    epsilon: float = Field(0.0, description="contrastive baseline: the threshold of eq. 2 (the paper keeps it at 0 "
                           "in every evaluation; its reference, sentence-transformers' ContrastiveLoss with cosine "
                           "distance and margin 1, is epsilon 0)")
    margin: float = Field(5.0, gt=0, description="triplet baseline: the margin")
    distance: Literal["euclidean", "cosine"] = Field("euclidean", description="triplet baseline: the distance (the "
        "contrastive baseline's is the cosine's, eq. 2)")
    mining: Literal["hardest", "random"] = Field("hardest", description="triplet baseline: how each anchor's "
                                                 "negative is picked in the batch")
    positive_threshold: float | None = Field(None, description="contrastive/triplet: labels above it are "
                                             "positives (default: the middle of the label range; SICK: 3.0)")
    train_data: str = Field("stsb", description="stsb, sickr, snli, mrpc, or prepared:NAME: scored pairs of your own "
                            "(sentsweep data prepare NAME --kind scored-pairs)")
    train_split: str = Field("train", description="the split of a registered train_data (not read for prepared:NAME)")
    max_train_pairs: int | None = Field(None, gt=0, description="train on this many pairs, a seeded sample across "
                                        "the file (sentsweep.evaluation.sts.sample_indices); null: all")

    @field_validator("train_data")
    @classmethod
    def _a_training_set(cls, value: str) -> str:
        if value in TRAIN_SETS or (is_prepared_ref(value) and value != PREPARED_PREFIX):
            return value
        raise ValueError(f"unknown training set '{value}': {', '.join(TRAIN_SETS)}, or prepared:NAME for scored "
                         "pairs of your own")

    @field_validator("pooling")
    @classmethod
    def _bi_encoder_pooling(cls, pooling: str | None, info: ValidationInfo) -> str | None:
        """The cross-encoder (eq. 11) scores the [CLS] state: a pooling set with it would do nothing."""
        if pooling is not None and info.data.get("architecture") == "cross":
            raise ValueError(f"'{pooling}' does nothing with architecture 'cross': the cross-encoder scores "
                             "the [CLS] state (eq. 11); remove pooling")
        return pooling

    @model_validator(mode="after")
    def _consistent(self) -> CosentConfig:
        if self.architecture == "cross" and self.loss != "cosent":
            raise ValueError("the cross-encoder is trained with loss 'cosent' only (eq. 11)")
        if self.loss == "softmax" and (self.train_data not in TRAIN_SETS or TRAIN_SETS[self.train_data][3] is None):
            raise ValueError(f"loss 'softmax' needs class labels; '{self.train_data}' has graded scores")
        if self.train_data not in TRAIN_SETS and "train_split" in self.model_fields_set:
            raise ConfigError(f"'{self.train_data}' is one set of pairs and has no splits: remove train_split",
                              field="train_split")
        for field, dev_set in [("dev_data", self.dev_data), *(("extra_dev_data", d) for d in self.extra_dev_data)]:
            if (self.train_data, self.train_split) in task_data_splits(DEV_SETS[dev_set]):
                raise ConfigError(f"'{dev_set}' scores {self.train_data} {self.train_split}, the split this trial "
                                  f"trains on (train_data, train_split): choose another {field} or train_split",
                                  field=field)
        try:
            tested = scored_test_splits(CROSS_TEST_TASKS if self.architecture == "cross" else self.test_tasks)
        except ValueError:  # an unknown test task: refused where the suite is checked and run
            tested = set()
        if (self.train_data, self.train_split) in tested:
            raise ConfigError(f"the test suite scores {self.train_data} {self.train_split}, the split this trial "
                              "trains on (train_data, train_split): its test figures would be measured on training "
                              "pairs; choose another train_split or test_tasks", field="train_split")
        if self.train_data == "snli":
            for name, value in NLI_DEFAULTS.items():
                if name not in self.model_fields_set:
                    setattr(self, name, value)
        self.warn_unused(self.loss, loss_parameters(self.loss), LOSS_SETTINGS + BASELINE_SETTINGS)
        cross_suite = self.architecture == "cross" and "test_tasks" in self.model_fields_set
        if cross_suite and self.test_tasks != CROSS_TEST_TASKS:
            logger.warning("CosentConfig: architecture 'cross' scores sentence pairs and has no sentence embedding; "
                           "its test suite is %s, so test_tasks '%s' has no effect", CROSS_TEST_TASKS, self.test_tasks)
        if self.architecture == "bi" and self.pooling is None:  # NLI: per family (methods/cosent/pooling.py)
            nli = self.train_data == "snli"
            self.pooling = nli_pooling(model_type(self.model)) if nli else DEFAULT_POOLING  # type: ignore[assignment]
        return self


@dataclass
class PairData:
    """The training pairs, their labels and the range the labels lie in (``num_labels``: classes, None for
    graded scores)."""

    first: list[str]
    second: list[str]
    labels: Tensor
    label_min: float
    label_max: float
    num_labels: int | None


def load_train_pairs(config: CosentConfig) -> PairData:
    """The training pairs as parallel lists and a float label tensor (labels kept unnormalised); ``max_train_pairs``
    of them, a seeded sample in file order, when given. Not the first rows: STS-B's files are sorted by genre (its
    train set opens with 2000 captions), so a cut at the top would train on captions alone. Prepared pairs of your
    own bring their score range; a registered set's is in :data:`TRAIN_SETS`."""
    kind, label_min, label_max, num_labels = TRAIN_SETS.get(config.train_data, ("scored", 0.0, 0.0, None))
    if kind == "scored":
        rows = datasets.scored_pairs(config.train_data, config.train_split, data_dir=config.data_dir)
        labels = [p.score for p in rows]
        if isinstance(rows, PreparedScoredPairs):
            label_min, label_max = rows.score_range
    else:
        rows = datasets.labelled_pairs(config.train_data, config.train_split, data_dir=config.data_dir)
        labels = [float(p.label) for p in rows]
    if config.max_train_pairs is not None:
        kept = sample_indices(len(rows), config.max_train_pairs)
        rows, labels = [rows[i] for i in kept], [labels[i] for i in kept]
    return PairData([p.s1 for p in rows], [p.s2 for p in rows], torch.tensor(labels, dtype=torch.float32),
                    label_min, label_max, num_labels)


class CosentTask:
    """CoSENT (or a baseline) on labelled pairs, for :class:`~sentsweep.trainables.loop.TrainingLoop`."""

    def __init__(self, config: CosentConfig) -> None:
        self.config = config
        self.train = load_train_pairs(config)
        self.dev = config.dev_evaluator(DEV_BATCH_SIZE)
        label_min, label_max, num_labels = self.train.label_min, self.train.label_max, self.train.num_labels
        if config.architecture == "bi":
            encoder = with_eval_max_length(TransformerEncoder(
                config.model,
                EncoderSettings(pooling=config.pooling, max_length=config.max_length),
                device=config.device,
                eval_amp=config.eval_amp,
            ), config.eval_max_length)
            self.net: BiEncoder | CrossEncoder = BiEncoder(encoder, max_length=config.max_length)
            threshold = config.positive_threshold
            available: dict[str, Any] = {
                "scale": config.scale, "label_min": label_min, "label_max": label_max, "dim": encoder.dim,
                "num_labels": num_labels, "epsilon": config.epsilon, "margin": config.margin,
                "distance": config.distance, "mining": config.mining,
                "positive_threshold": POSITIVE_THRESHOLDS.get(config.train_data, label_midpoint(label_min, label_max))
                if threshold is None else threshold,
            }
            self.pair_loss = create_loss(
                config.loss, **{name: available[name] for name in loss_parameters(config.loss)}
            ).to(encoder.device)
        else:
            self.net = CrossEncoder(config.model, config.max_length, device=config.device,
                                    eval_max_length=config.eval_max_length, eval_amp=config.eval_amp)
            self.pair_loss = nn.Module()  # eq. 11 has no loss parameters: the scores come from the net
        self.model = nn.ModuleDict({"net": self.net, "loss": self.pair_loss})

    # -- TrainTask ---------------------------------------------------------------------------------
    def batches(self, epoch: int, generator: torch.Generator) -> list[Tensor]:
        """Shuffled index batches of ``batch_size`` pairs (the last, smaller one kept); none without a pair."""
        order = torch.randperm(len(self.train.first), generator=generator)
        return [batch for batch in order.split(self.config.batch_size) if len(batch)]

    def loss(self, batch: Tensor) -> tuple[Tensor, dict[str, float]]:
        first = [self.train.first[i] for i in batch.tolist()]
        second = [self.train.second[i] for i in batch.tolist()]
        labels = self.train.labels[batch]
        if isinstance(self.net, CrossEncoder):
            scores = self.net(first, second)
            return cross_encoder_cosent_loss(scores, labels.to(scores.device), scale=self.config.scale), {}
        u, v = self.net(first, second)
        value = self.pair_loss(u, v, labels.to(u.device))
        cos = nn.functional.cosine_similarity(u.detach().float(), v.detach().float(), dim=-1)
        return value, {"cos_mean": float(cos.mean())}

    def score_pairs(self, pairs: list[Any]) -> np.ndarray:
        """The cross-encoder's raw score of each pair (the pair scorer of its dev and test sets)."""
        assert isinstance(self.net, CrossEncoder)
        return self.net.predict([(p.s1, p.s2) for p in pairs])

    def score(self, evaluator: StsEvaluator) -> dict[str, float]:
        """Spearman x100 on ``evaluator``'s sets: the cosine of the bi-encoder's embeddings, or the
        cross-encoder's pair scores."""
        if isinstance(self.net, CrossEncoder):
            return dict(evaluator.score_pairs(self.score_pairs, self.net.eval_precision).metrics)
        return dict(evaluator(self.net.encoder).metrics)

    def evaluate(self) -> dict[str, float]:
        return self.score(self.dev)

    def save(self, directory: Path) -> None:
        if isinstance(self.net, CrossEncoder):
            self.net.save(directory)
        else:
            self.net.encoder.save(directory)
        head = self.pair_loss.state_dict()
        if head:
            save_file({k: v.contiguous().cpu() for k, v in head.items()}, str(directory / LOSS_HEAD_FILE))

    def load(self, directory: Path) -> None:
        module = self.net.model if isinstance(self.net, CrossEncoder) else self.net.encoder.model
        module.load_state_dict(load_file(str(directory / "model.safetensors"), device=str(module.device)))
        if isinstance(self.net, CrossEncoder):
            self.net.head.load_state_dict(load_file(str(directory / "score_head.safetensors")))
        head_file = directory / LOSS_HEAD_FILE
        if head_file.exists():
            self.pair_loss.load_state_dict(load_file(str(head_file)))


class CosentMethod(Method[CosentConfig, CosentTask]):
    """CoSENT: a bi-encoder (or cross-encoder) trained on labelled pairs with the ranking loss."""

    name = "cosent"
    config_cls = CosentConfig
    saved_marker: ClassVar[str | None] = None  # a plain transformer encoder folder

    def build_task(self, config: CosentConfig) -> CosentTask:
        return CosentTask(config)

    def final_evaluation(self, task: CosentTask, config: CosentConfig) -> dict[str, float]:
        """The best weights on the test suite (``test_tasks``; the cross-encoder scores STS-B/SICK-R test)."""
        if isinstance(task.net, CrossEncoder):
            return task.score(StsEvaluator(CROSS_TEST_TASKS, data_dir=config.data_dir))
        return dict(evaluate(task.net.encoder, config.test_tasks, data_dir=config.data_dir,
                             **config.senteval_options()).metrics)

    def load_encoder(self, folder: Path, device: str | None = None, **settings: Any) -> Embedder:
        """A saved bi-encoder (any transformer encoder folder, the ``minilm`` alias or a hub id); a saved
        cross-encoder is refused: it scores pairs and has no sentence embedding."""
        if (folder / HEAD_FILE).is_file():
            raise ConfigError("a CoSENT cross-encoder scores sentence pairs and has no sentence embedding",
                              file=str(folder))
        if (folder / ENCODER_CONFIG_FILE).is_file():
            return TransformerEncoder.load(folder, device=device, **settings)
        # a plain transformer folder: up to the model's token limit unless given, as the trained models evaluate
        encoder = TransformerEncoder(str(folder), EncoderSettings(**settings), device=device)
        return with_eval_max_length(encoder, settings.get("max_length"))


COSENT = CosentMethod()
