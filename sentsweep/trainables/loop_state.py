"""The training loop's settings (:class:`LoopConfig`), the progress a checkpoint carries (:class:`LoopState`) and
what a run returns (:class:`LoopResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass
class LoopConfig:
    """Optimisation settings shared by every method, taken from a validated trial config
    (:meth:`sentsweep.trainables.trial_config.TrialConfig.loop_config`: its defaults and checks)."""

    seed: int
    optimizer: Literal["adamw", "adam"]
    lr: float
    weight_decay: float
    warmup_ratio: float
    lr_schedule: Literal["linear", "constant"]
    max_grad_norm: float | None
    epochs: float
    max_steps: int | None
    eval_every: int
    metric: str
    mode: Literal["max", "min"]
    amp: bool
    eval_at_start: bool
    checkpoint_every: int  # a checkpoint every N evaluations (the last evaluation always writes one)
    log_every: int = 25


@dataclass
class LoopState:
    """Progress that a checkpoint must carry for an exact resume."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_value: float | None = None
    best_step: int | None = None
    history: list[dict[str, float]] = field(default_factory=list)
    #: The losses and the task's diagnostics of the steps since the last evaluation, which its ``train_*`` figures
    #: average: a drain's checkpoint falls between two evaluations, and the resumed trial averages them all.
    losses: list[float] = field(default_factory=list)
    diagnostics: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class LoopResult:
    state: LoopState
    best_dir: Path | None
    stopped_reason: str
    seconds: float
