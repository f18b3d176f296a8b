"""The typed trial config every method's config subclasses, and its parsing into one clear error.

A method's defaults live in its config class and nowhere else: the loop settings, the loss arguments
and the first point of the method's search spaces (:func:`sentsweep.search_spaces.spec.bind`)
are all read from it. Each invariant between fields is checked once, in a validator here or in the
method's config.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from sentsweep.errors import ConfigError, config_error
from sentsweep.evaluation.senteval.settings import SENTEVAL_OPTION_FIELDS, SENTEVAL_OPTION_HELP, SentEvalOptions
from sentsweep.evaluation.sts import NLI_DEV, SICKR_TRIAL, STSB_DEV, StsEvaluator
from sentsweep.methods.precision import EVAL_AMP
from sentsweep.trainables.loop_state import LoopConfig

#: SentEval's defaults (the one place: :class:`SentEvalOptions`).
_SENTEVAL = SentEvalOptions()
#: ``eval_max_length`` of the transformer methods: the token limit of every evaluation (dev selection, test suites,
#: diagnostics) and of the saved model; None, the default, is the model's limit (whole sentences, as the references
#: evaluate). ``max_length`` is the training length only.
EvalMaxLength = Annotated[int | None, Field(ge=8, description="evaluation length (dev, test, saved model); "
                                            "default the model's limit")]
#: The names of the dev sets (``dev_data``, ``extra_dev_data``): the keys of :data:`DEV_SETS`.
DevSet = Literal["stsb", "sickr", "nli"]
#: Dev sets a trial can select on: ``dev_data`` -> the metric (and STS task) name. ``nli``: SNLI dev, Spearman x100 of
#: the cosine against contradiction 0 < neutral 1 < entailment 2, the CoSENT reference's selection set for its NLI
#: transfer (its AllNLI dev set also holds MultiNLI's dev pairs, which the shared data lacks).
DEV_SETS: dict[str, str] = {"stsb": STSB_DEV, "sickr": SICKR_TRIAL, "nli": NLI_DEV}


logger = logging.getLogger(__name__)

class TrialConfig(BaseModel):
    """Settings every method shares; a method's config subclasses this and adds its own fields."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), allow_inf_nan=False)  # .inf, .nan: errors

    model: str = Field("minilm", description="the encoder to train: an alias (minilm), a local folder or a hub id")
    max_length: int = Field(64, ge=8, description="tokens per training sentence")
    batch_size: int = Field(16, ge=2, description="training pairs or sentences per step")
    seed: int = Field(42, description="the trial's seed (weights, data order, dropout)")
    optimizer: Literal["adamw", "adam"] = Field("adamw", description="the optimiser: adamw or adam")
    lr: float = Field(2e-5, gt=0, description="peak learning rate")
    weight_decay: float = Field(0.01, ge=0, description="the optimiser's weight decay")
    warmup_ratio: float = Field(0.1, ge=0, lt=1, description="share of the steps with a linear warmup")
    lr_schedule: Literal["linear", "constant"] = Field("linear", description="the learning rate after warmup: linear "
        "decay to 0, or constant")
    max_grad_norm: float | None = Field(1.0, gt=0, description="gradient clipping norm (null: none)")
    epochs: float = Field(1.0, gt=0, description="passes over the training data (unless max_steps is set)")
    max_steps: int | None = Field(None, gt=0, description="training steps, in place of epochs (null: epochs decide)")
    eval_every: int = Field(125, gt=0, description="steps between dev evaluations (each one a report to Tune and a "
                                                    "rung for ASHA)")
    checkpoint_every: int = Field(1, ge=1, description="a checkpoint every N dev evaluations (and at the last)")
    dev_data: DevSet = Field("stsb", description="dev set of model selection (STS-B dev, SICK-R trial, SNLI dev "
                             "against its labels)")
    extra_dev_data: list[DevSet] = Field(
        default_factory=list, description="further dev sets scored at every evaluation (a multi-objective sweep's "
        "other objectives); model selection stays on dev_data")
    metric: str = Field(STSB_DEV, description="the dev metric the trial selects its best weights on")
    mode: Literal["max", "min"] = Field("max", description="max or min: whether a higher metric is better")
    amp: bool = Field(True, description="bf16/fp16 autocast of training steps on a GPU")
    eval_amp: bool = Field(EVAL_AMP, description="autocast of evaluation (dev selection, test suites, diagnostics) "
                           "on a GPU; off: float32, as the references evaluate")
    eval_at_start: bool = Field(False, description="score the dev set before the first step too")
    device: str | None = Field(None, description="cpu, cuda or cuda:N (null: the GPU when there is one)")
    data_dir: str | None = Field(None, description="the data directory (null: $SENTSWEEP_DATA, else the bundled "
                                                    "sample)")
    max_dev_pairs: int | None = Field(None, gt=0, description="score this many pairs of each dev set, a seeded "
                                      "sample across the file (sentsweep.evaluation.sts.sampled_pairs); null: all")
    test_tasks: str = Field("sts", description="the test suite of the trial's best weights: sts, senteval, task "
                                                "names, comma-separated")
    # SentEval options of the test suite, one per SentEvalOptions field (SENTEVAL_OPTION_FIELDS)
    senteval_setting: str = Field(_SENTEVAL.setting, description=SENTEVAL_OPTION_HELP["setting"])
    senteval_kfold: int | None = Field(_SENTEVAL.kfold, ge=2, description=SENTEVAL_OPTION_HELP["kfold"])
    senteval_inner_kfold: int | None = Field(_SENTEVAL.inner_kfold, ge=2,
                                             description=SENTEVAL_OPTION_HELP["inner_kfold"])
    senteval_seed: int = Field(_SENTEVAL.seed, description=SENTEVAL_OPTION_HELP["seed"])
    senteval_mrpc_features: str = Field(_SENTEVAL.mrpc_features, description=SENTEVAL_OPTION_HELP["mrpc_features"])
    system_metrics: bool = Field(False, description="report a sample of the machine with the results "
                                 "(sentsweep.trainables.system_metrics; the sweep's tracking.system_metrics)")
    system_metrics_interval_s: float = Field(10.0, gt=0, description="seconds between system-metric samples")

    @field_validator("senteval_setting", "senteval_mrpc_features")
    @classmethod
    def _a_senteval_option(cls, value: str, info: ValidationInfo) -> str:
        """Checked by SentEvalOptions itself (one place for the valid names)."""
        SentEvalOptions(**{SENTEVAL_OPTION_FIELDS[info.field_name]: value})
        return value

    def senteval_options(self) -> dict[str, Any]:
        """The SentEval options for :func:`sentsweep.evaluation.evaluate` (``setting``, ``kfold``, ...)."""
        return {option: getattr(self, name) for name, option in SENTEVAL_OPTION_FIELDS.items()}

    @model_validator(mode="after")
    def _metric_follows_the_dev_set(self) -> TrialConfig:
        """A metric naming a dev set is the one of ``dev_data``: the default follows it (``dev_data: sickr`` selects
        on sickr_trial, ``dev_data: nli`` on nli_dev); a metric set to another dev set's is refused, since the loop
        selects on the set it scores, and a sweep ranking by that metric would not find it in any report."""
        if self.metric not in DEV_SETS.values() or self.metric == self.dev_metric:
            return self
        if "metric" in self.model_fields_set:
            raise ConfigError(f"'{self.metric}' is not the metric of dev_data '{self.dev_data}', which selects on "
                              f"'{self.dev_metric}': set metric: {self.dev_metric} (or the dev_data of "
                              f"'{self.metric}')", field="metric")
        self.metric = self.dev_metric
        return self

    @property
    def dev_metric(self) -> str:
        """The metric (and STS task) name of the dev set."""
        return DEV_SETS[self.dev_data]

    def dev_evaluator(self, batch_size: int) -> StsEvaluator:
        """The dev set, and the ``extra_dev_data`` sets, loaded once (``max_dev_pairs`` pairs of each, a seeded
        sample), scored every ``eval_every`` steps."""
        extra = [DEV_SETS[name] for name in self.extra_dev_data if DEV_SETS[name] != self.dev_metric]
        return StsEvaluator([self.dev_metric, *dict.fromkeys(extra)], data_dir=self.data_dir, batch_size=batch_size,
                            max_pairs=self.max_dev_pairs)

    def warn_unused(self, loss: str, taken: tuple[str, ...], offered: tuple[str, ...]) -> None:
        """Warn (one line) about the settings of ``offered`` this config sets explicitly that its ``loss`` does not
        take (``taken``). A warning, not a refusal: a sweep may fix a loss's settings while it searches the loss
        (SNCSE's Table 3 ablation)."""
        self.warn_no_effect([name for name in offered if name not in taken], f"loss '{loss}' does not use")

    def warn_no_effect(self, names: Sequence[str], why: str) -> None:
        """Warn (one line: ``why``, then the names) about the settings of ``names`` this config sets explicitly:
        a parameter that does nothing is never accepted silently."""
        unused = [name for name in names if name in self.model_fields_set]
        if unused:
            shown = [type(self).model_fields[name].alias or name for name in unused]
            logger.warning("%s: %s %s; %s no effect", type(self).__name__, why, ", ".join(shown),
                           "it has" if len(unused) == 1 else "they have")

    def loop_config(self) -> LoopConfig:
        fields = LoopConfig.__dataclass_fields__
        return LoopConfig(**{name: getattr(self, name) for name in fields if hasattr(self, name)})

    def with_output_dir(self, output_dir: Path) -> TrialConfig:
        """This config told where the run's outputs go (a hook for configs that write extra files there)."""
        return self


def parse_config(cls: type[TrialConfig], raw: dict[str, Any], source: str = "trial config") -> TrialConfig:
    """Validate ``raw`` into ``cls``; the first error names the field (and the file or source)."""
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:  # a check that read something (a model's config) names its own field
        raise config_error(exc, source, model=cls) from None


def public_params(config: TrialConfig) -> dict[str, Any]:
    """The config as loggable params, by their YAML names (``lambda``, not ``lambda_``); what is sampled for
    tracking and where its files go are left out (they are not settings of the training)."""
    return config.model_dump(exclude={"system_metrics", "system_metrics_interval_s", "output_dir"}, by_alias=True)
