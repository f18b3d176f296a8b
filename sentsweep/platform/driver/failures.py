"""Trials that failed for a reason a retry cannot fix, as the driver sees them.

A trial whose data is unreadable, whose config is invalid or whose loss became NaN fails the same way on
every attempt, so it is not retried (``max_failures`` is for crashes: a lost worker, a killed node): its trainable
reports :data:`~sentsweep.trainables.method.FAILED_KEY` with the reason and ends
(:meth:`sentsweep.trainables.method.Method.train_ray`). Tune then sees a TERMINATED trial; the platform
counts it failed, tells Optuna FAIL (with the reason as the trial's ``fail_reason`` user attribute), closes
its MLflow run FAILED, and :class:`FailureLines` prints one line for it instead of Ray's tracebacks.

A divergence (NaN loss) or an out-of-memory error also marks the settings *infeasible*
(:mod:`sentsweep.trainables.infeasible`, :func:`infeasibility`): Optuna is told a constraint violation instead of
FAIL, so that TPE learns the region (:class:`~sentsweep.platform.search.searcher.PruningAwareOptunaSearch`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ray.tune import Callback

from sentsweep.platform.results import failure_reason, infeasibility, is_failed
from sentsweep.tracking.names import SEARCH_PREFIX, trial_label

if TYPE_CHECKING:
    from ray.tune.experiment import Trial


class FailureLines(Callback):
    """One line per deterministically failed trial: ``trial t03 failed (not retried): DataError: ...``, the trial
    named by its label (``label_prefix`` and its number, :mod:`sentsweep.tracking.names`)."""

    def __init__(self, label_prefix: str = SEARCH_PREFIX) -> None:
        self.label_prefix = label_prefix

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if is_failed(trial.last_result):
            kind = infeasibility(trial.last_result)
            told = f"; Optuna told: infeasible ({kind})" if kind else ""
            label = trial_label(trials.index(trial) + 1, self.label_prefix) if trial in trials else trial.trial_id
            print(f"trial {label} failed (not retried): {failure_reason(trial.last_result)}{told}",
                  file=sys.stdout, flush=True)
