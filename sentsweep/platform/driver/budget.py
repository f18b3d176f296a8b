"""A sweep's compute budget as a Ray Tune ``Stopper``. Tune pickles the stopper, so it holds only the sweep's name and
counts into the :class:`SweepBudget` :func:`driving` names (docs/architecture.md, "Budgets that survive a resume")."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ray.tune import Callback, Stopper
from ray.tune.experiment import Trial

from sentsweep.platform.config import BudgetConfig
from sentsweep.platform.objectives import TIME_TOTAL_KEY, Objective, objective_value
from sentsweep.tracking.vocabulary import STOP_REASON_TAG, STOPPED_REASON


def trial_compute(result: Mapping[str, Any] | None) -> tuple[float, float, float]:
    """Compute, GPU and wall seconds of a trial whose latest result is ``result`` (zeros before its first)."""
    if not result or not isinstance(result.get(TIME_TOTAL_KEY), int | float):
        return 0.0, 0.0, 0.0
    return (objective_value(result, Objective("compute_seconds", "min")) or 0.0,
            objective_value(result, Objective("gpu_seconds", "min")) or 0.0, float(result[TIME_TOTAL_KEY]))


def compute_figures(counts: Iterable[tuple[float, float, float]]) -> dict[str, float]:
    """The ``budget_*`` compute metrics of trials counted by :func:`trial_compute`."""
    columns = list(zip(*counts, strict=True)) or [(), (), ()]
    names = ("budget_compute_seconds", "budget_gpu_seconds", "budget_trial_seconds")
    return {name: float(sum(column)) for name, column in zip(names, columns, strict=True)}


@dataclass
class SweepBudget:
    """The budget of one sweep in its driver, for one session: the limits, the count, whether it is spent."""

    budget: BudgetConfig
    clock: Callable[[], float] = time.monotonic
    echo: Callable[[str], None] = print
    trials: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # trial id -> trial_compute()
    wall_seconds: float = 0.0  # the driver's time in Tune's loop, earlier sessions included
    spent: str | None = None  # why this session stopped the sweep (None: not stopped)
    earlier: str | None = None  # the stop an earlier session recorded (restored with Tune's state)
    ran: bool = False  # whether Tune's loop ran in this session
    _tick: float | None = None

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from an earlier session's :meth:`state`, which Tune saved."""
        self.wall_seconds, self.earlier = float(state.get("wall_seconds", 0.0)), state.get("stopped")

    def state(self) -> dict[str, Any]:
        return {"wall_seconds": self.wall_seconds, "stopped": self.spent or self.earlier}

    def start(self) -> None:
        self.ran, self._tick = True, self.clock()

    def see(self, trial_id: str, result: Mapping[str, Any] | None) -> None:
        self.trials[trial_id] = trial_compute(result)

    def check(self) -> bool:
        """Count the driver's time since the last check; whether the budget is spent (the first limit reached)."""
        now = self.clock()
        if self._tick is not None:
            self.wall_seconds += now - self._tick
            self._tick = now
        limits = (("gpu_hours", self.budget.gpu_hours, sum(compute for compute, _, _ in self.trials.values())),
                  ("wall_hours", self.budget.wall_hours, self.wall_seconds))
        reached = [(name, hours, used) for name, hours, used in limits if hours is not None and used >= hours * 3600]
        if self.spent is None and reached:
            name, hours, used = reached[0]
            self.spent = (f"{STOPPED_REASON}: {name} {hours:g} spent ({used / 3600:.4g} h counted); no new trial "
                          "started, the running ones stopped at their last report")
            self.echo(self.spent)
        return self.spent is not None

    def figures(self) -> dict[str, float]:
        """The parent run's ``budget_*`` metrics."""
        return {**compute_figures(self.trials.values()), "budget_wall_seconds": self.wall_seconds}


#: The budget of each sweep this process drives, by sweep name (:func:`driving`).
_DRIVEN: dict[str, SweepBudget] = {}


@contextlib.contextmanager
def driving(sweep_name: str, budget: SweepBudget) -> Iterator[SweepBudget]:
    """Make ``budget`` the one the stopper of sweep ``sweep_name`` counts into while the block runs."""
    _DRIVEN[sweep_name] = budget
    try:
        yield budget
    finally:
        _DRIVEN.pop(sweep_name, None)


class BudgetStopper(Stopper, Callback):
    """The stopper and a callback of a sweep, counting into its driven :class:`SweepBudget`. Without one (Tune's state
    read outside a driver) it counts nothing and never stops."""

    def __init__(self, sweep_name: str) -> None:
        self.sweep_name = sweep_name

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        if (budget := _DRIVEN.get(self.sweep_name)) is not None:
            budget.see(trial_id, result)
        return False  # stop_all stops every trial alike

    def stop_all(self) -> bool:
        return (budget := _DRIVEN.get(self.sweep_name)) is not None and budget.check()

    def setup(self, **info: Any) -> None:
        if (budget := _DRIVEN.get(self.sweep_name)) is not None:
            budget.start()

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if (budget := _DRIVEN.get(self.sweep_name)) is not None:
            for trial in trials:
                budget.see(trial.trial_id, trial.last_result)

    def get_state(self) -> dict[str, Any] | None:
        return budget.state() if (budget := _DRIVEN.get(self.sweep_name)) is not None else None

    def set_state(self, state: dict[str, Any]) -> None:
        if (budget := _DRIVEN.get(self.sweep_name)) is not None:
            budget.restore(state)


def record_budget(budget: SweepBudget, log_metrics: Callable[[dict[str, float]], None],
                  set_tags: Callable[[dict[str, str]], None], notify: Callable[[str], Any]) -> None:
    """After the search: the counts on the parent run and, when the budget stopped it, why (the tag and the
    notification). Nothing when Tune's loop did not run in this session (the search was over already)."""
    if not budget.ran:
        return
    log_metrics(budget.figures())
    if budget.spent:
        set_tags({STOP_REASON_TAG: budget.spent})
        notify(budget.spent)
    elif budget.earlier:  # an earlier session's stop no longer holds
        set_tags({STOP_REASON_TAG: f"none: the budget changed on resume lifted the earlier stop ({budget.earlier})"})


def record_stage_compute(search: Iterable[Any], stage: Iterable[Any],
                         log_metrics: Callable[[dict[str, float]], None]) -> None:
    """After the confirmation stage: the compute metrics of the search's and the stage's trials (Tune's results)."""
    log_metrics(compute_figures(trial_compute(result.metrics) for result in (*search, *stage)))
