"""A sweep's compute budget as a Ray Tune ``Stopper``. Tune pickles the stopper, so it holds only the sweep's name and
counts into the :class:`SweepBudget` :func:`driving` names (docs/architecture.md, "Budgets that survive a resume").
Once the budget is spent no trial starts, a running trial stops at its next report, and one whose report was its last
evaluation finishes its final evaluation first (within :data:`FINAL_EVALUATION_GRACE_S`)."""

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
from sentsweep.platform.results import BUDGET_STOP_KEY, is_final, is_last_evaluation
from sentsweep.platform.stops import SPENT
from sentsweep.tracking.vocabulary import STOP_REASON_TAG, STOPPED_REASON


def trial_compute(result: Mapping[str, Any] | None) -> tuple[float, float, float]:
    """Compute, GPU and wall seconds of a trial whose latest result is ``result`` (zeros before its first)."""
    if not result or not isinstance(result.get(TIME_TOTAL_KEY), int | float):
        return 0.0, 0.0, 0.0
    return (objective_value(result, Objective("compute_seconds", "min")) or 0.0,
            objective_value(result, Objective("gpu_seconds", "min")) or 0.0, float(result[TIME_TOTAL_KEY]))


#: How long a spent budget waits for the trials in their final evaluation (their test suite) before it stops them.
FINAL_EVALUATION_GRACE_S = 900.0


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
    finishing: set[str] = field(default_factory=set)  # running trials whose latest report was their last evaluation
    _tick: float | None = None
    _spent_at: float | None = None

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from an earlier session's :meth:`state`, which Tune saved."""
        self.wall_seconds, self.earlier = float(state.get("wall_seconds", 0.0)), state.get("stopped")

    def state(self) -> dict[str, Any]:
        return {"wall_seconds": self.wall_seconds, "stopped": self.spent or self.earlier}

    def start(self) -> None:
        self.ran, self._tick = True, self.clock()

    def see(self, trial_id: str, result: Mapping[str, Any] | None, running: bool = True) -> None:
        self.trials[trial_id] = trial_compute(result)
        if running and is_last_evaluation(result) and not is_final(result):
            self.finishing.add(trial_id)
        else:
            self.finishing.discard(trial_id)

    def stops(self, trial_id: str, result: Mapping[str, Any]) -> bool:
        """Whether a trial's report ends it: the budget is spent, and the report is neither the trial's last
        evaluation (it trained every step) nor its final report."""
        return self.spent is not None and trial_id not in self.finishing and not is_final(result)

    def stops_all(self) -> bool:
        """Whether every trial stops now: the budget is spent and no trial is in its final evaluation, or the grace
        for those is over."""
        return self.check() and (not self.finishing
                                 or self.clock() - (self._spent_at or 0.0) >= FINAL_EVALUATION_GRACE_S)

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
            self.spent, self._spent_at = (f"{STOPPED_REASON}: {name} {hours:g} spent ({used / 3600:.4g} h counted); "
                                          "no new trial starts, a running one stops at its next report, one that "
                                          "trained its last step finishes its final evaluation"), now
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
        SPENT.discard(sweep_name)


class BudgetStopper(Stopper, Callback):
    """The stopper and a callback of a sweep, counting into its driven :class:`SweepBudget`. Without one (Tune's state
    read outside a driver) it counts nothing and never stops."""

    def __init__(self, sweep_name: str) -> None:
        self.sweep_name = sweep_name

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        if (budget := _DRIVEN.get(self.sweep_name)) is None:
            return False
        budget.see(trial_id, result)
        if not budget.stops(trial_id, result):
            return False
        result[BUDGET_STOP_KEY] = True  # Tune marks the report done, and passes it on: the trial reads as stopped
        return True

    def stop_all(self) -> bool:
        if (budget := _DRIVEN.get(self.sweep_name)) is None:
            return False
        stop = budget.stops_all()
        if budget.spent is not None:  # the sweep's searcher starts no trial from now on
            SPENT.add(self.sweep_name)
        return stop

    def setup(self, **info: Any) -> None:
        if (budget := _DRIVEN.get(self.sweep_name)) is not None:
            budget.start()

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if (budget := _DRIVEN.get(self.sweep_name)) is not None:
            for trial in trials:
                budget.see(trial.trial_id, trial.last_result, running=trial.status == Trial.RUNNING)

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
