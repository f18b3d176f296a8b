"""What a sweep produced (:class:`SweepOutcome`): written by ``sweep``, completed by ``finalize``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.tune import ResultGrid

    from sentsweep.platform.confirm.outcome import ConfirmationOutcome


@dataclass
class SweepOutcome:
    """What a sweep produced: where it lives, how its trials ended, its best trial and model."""

    sweep_name: str
    sweep_dir: str
    parent_run_id: str
    experiment_id: str
    tracking_uri: str
    counts: dict[str, int]
    wall_seconds: float
    best_trial_id: str | None = None
    best_run_id: str | None = None
    best_value: float | None = None
    best_config: dict[str, Any] = field(default_factory=dict)
    final_metrics: dict[str, float] = field(default_factory=dict)
    export_dir: str | None = None
    model_version: str | None = None
    fit_started: float = 0.0  # epoch seconds when Tuner.fit began
    results: ResultGrid | None = field(default=None, repr=False)
    confirmation: ConfirmationOutcome | None = field(default=None, repr=False)  # the confirmation stage's decision
    reference_point: dict[str, Any] | None = None  # the reference trial's settings (the paper's), when one ran
