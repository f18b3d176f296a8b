"""What a sweep produced (:class:`SweepOutcome`) and the confirmation stage's decision. A candidate's further seeds
``x_1..x_n`` give the mean, the sample sd (``n - 1``) and the 95% interval ``m +- t(0.975, n - 1) * s / sqrt(n)``;
the search's own run is left out (it was selected on its value: the winner's curse)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray.tune import Result, ResultGrid


@dataclass(frozen=True)
class Interval:
    """A configuration's seeds summarised: count, mean, standard deviation, the 95% interval of the mean."""

    n: int
    mean: float
    std: float
    low: float
    high: float

    def describe(self) -> str:
        if self.n == 0:
            return "no finished seed"
        if self.n < 2:
            return f"{self.mean:.2f} (1 seed)"
        return (f"{self.mean:.2f} +- {self.high - self.mean:.2f} [{self.low:.2f}, {self.high:.2f}] "
                f"(n={self.n}, sd {self.std:.2f}; 95% t interval of the mean)")


def interval(values: Sequence[float]) -> Interval:
    """The finite ``values``' mean, sample sd and 95% t interval of the mean (NaN for none, infinite for one)."""
    from scipy.stats import t

    finite = [float(v) for v in values if math.isfinite(float(v))]
    n = len(finite)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, math.nan)
    if n == 1:
        return Interval(1, finite[0], math.nan, -math.inf, math.inf)
    mean, std = statistics.fmean(finite), statistics.stdev(finite)
    half = float(t.ppf(0.975, n - 1)) * std / math.sqrt(n)  # 0 when the seeds agree (scipy's interval: NaN)
    return Interval(n, mean, std, mean - half, mean + half)


@dataclass(frozen=True)
class SeedRun:
    """One run of a configuration: the search's trial (``original``) or a confirmation trial."""

    trial_id: str
    seed: int
    value: float  # the sweep's metric (the run's best dev value); NaN when the run failed
    original: bool = False
    metrics: dict[str, float] = field(default_factory=dict)  # its final figures (dev and test)


@dataclass
class Candidate:
    """A configuration being confirmed: its rank in the search and its seeds (the search's run and the further)."""

    rank: int  # 1: the search's best trial
    trial_id: str  # the search trial it comes from
    params: dict[str, Any]  # the searched settings (to name it)
    runs: list[SeedRun] = field(default_factory=list)

    @property
    def search_value(self) -> float:
        """The value of the search's trial that made it a candidate (selected on it: outside the figures)."""
        return next((r.value for r in self.runs if r.original), math.nan)

    @property
    def further_runs(self) -> list[SeedRun]:
        """The confirmation's seeds: the sample the figures and the rule rest on."""
        return [r for r in self.runs if not r.original]

    @property
    def failed_seeds(self) -> int:
        """The further seeds without a value: failed, or stopped before their final report."""
        return sum(not math.isfinite(r.value) for r in self.further_runs)

    @property
    def interval(self) -> Interval:
        """The further seeds' figures (the search's run left out: it was selected on its value)."""
        return interval([r.value for r in self.further_runs])

    def representative(self) -> SeedRun:
        """The further seed whose value is closest to the further seeds' mean (the lower seed on a tie); the
        search's run only when no further seed finished (its weights are the only ones there are)."""
        mean = self.interval.mean
        usable = ([r for r in self.further_runs if math.isfinite(r.value)]
                  or [r for r in self.runs if r.original and math.isfinite(r.value)] or self.runs)
        return min(usable, key=lambda r: abs(r.value - mean) if math.isfinite(mean) else 0.0)


@dataclass
class ConfirmationOutcome:
    """What the stage decided: the candidates with all their seeds, the winner, the seed whose weights are used."""

    run_id: str
    rule: str
    candidates: list[Candidate]
    winner: Candidate
    chosen: SeedRun
    results: ResultGrid | None = None  # the confirmation trials

    @property
    def changed(self) -> bool:
        """Whether the rule chose another configuration than the search's single-seed best."""
        return self.winner.rank != 1

    def chosen_result(self, search_results: Iterable[Result] | None) -> Result | None:
        """The Tune result of the chosen seed (a search trial, or a confirmation trial)."""
        pool = search_results if self.chosen.original else self.results
        return next((r for r in pool or [] if str((r.metrics or {}).get("trial_id", "")) == self.chosen.trial_id),
                    None)


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
