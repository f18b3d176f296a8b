"""The Ray and MLflow side of a graceful stop (:mod:`~sentsweep.platform.driver.interrupt` has the signals).

Tune's ``fit`` returns normally after a SIGINT, its in-memory trials all TERMINATED by its cleanup, so a
stopped sweep is told from a finished one by the signal itself: :class:`StopWatch` (a Tune callback) wraps
Tune's SIGINT handler as ``fit`` starts so that a Ctrl+C is recorded as SIGTERM is. The unfinished trials
are then read from the experiment state Tune saved before its cleanup. It also ends ``fit`` at once
(:class:`~sentsweep.platform.folder.lock.LockLost`) once this driver lost the sweep's lock.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ray.tune import Callback

from sentsweep.platform.folder.lock import LockLost
from sentsweep.platform.stops import active_stops
from sentsweep.tracking.vocabulary import INTERRUPTED_REASON

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

    from sentsweep.platform.driver.drain import Drain
    from sentsweep.platform.location import SweepLocation
    from sentsweep.platform.tracking.parent_run import SweepRun


logger = logging.getLogger(__name__)


class StopWatch(Callback):
    """Records a SIGINT during ``fit`` in the driver's :class:`~sentsweep.platform.driver.interrupt.StopSignals` and
    feeds its :class:`~sentsweep.platform.driver.drain.Drain` with Tune's results and steps (pickled into the sweep's
    ``tuner.pkl``, it finds the current driver's through :func:`~sentsweep.platform.stops.active_stops`,
    also after a restore)."""

    def setup(self, **info: Any) -> None:
        stops = active_stops()
        if stops is not None:
            stops.watch_sigint()

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        drain = _drain()
        if drain is not None:
            drain.on_result(trial.trial_id, result)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        stops = active_stops()
        if stops is not None and stops.superseded is not None:
            # the lock was lost: Tune stops now, with no drain and no final save of its state
            raise LockLost(stops.superseded)
        drain = _drain()
        if drain is not None:
            drain.step(trials)


def _drain() -> Drain | None:
    stops = active_stops()
    return stops.drain if stops is not None else None


def unfinished_trials(location: SweepLocation) -> list[str]:
    """The ids of the trials Tune's saved experiment state holds as neither terminated nor errored."""
    from ray.tune import ExperimentAnalysis

    analysis = ExperimentAnalysis(location.uri if location.filesystem is None else location.fs_path,
                                  storage_filesystem=location.filesystem)
    return [t.trial_id for t in analysis.trials if t.status not in ("TERMINATED", "ERROR")]


def close_interrupted_trials(sweep: SweepRun, trial_ids: list[str]) -> None:
    """Close the runs of a stopped sweep's unfinished trials KILLED with the reason ``interrupted`` (a run
    that finished after Tune's last snapshot stays FINISHED: the resume reports it without training).

    Best effort, at once: a stop (an eviction's SIGTERM, with its grace period) must end with
    :class:`SweepInterrupted` however the tracking store is. When the store does not answer (a probe,
:func:`~sentsweep.platform.tracking.reachability.probe`) or a call fails, the runs are left RUNNING with a warning;
    the resume reattaches them. MLflow's own retries would take about 4 minutes in an outage, longer than an
    eviction's grace period."""
    from mlflow.exceptions import MlflowException

    from sentsweep.platform.tracking.reachability import first_line, store_answers
    from sentsweep.tracking.vocabulary import OUTCOME_TAG, REASON_TAG, find_trial_run

    if trial_ids and not store_answers(sweep.tracking_uri):
        logger.warning("the tracking store does not answer: the runs of %d interrupted trial(s) stay RUNNING until "
                       "the sweep is resumed", len(trial_ids))
        return
    for trial_id in trial_ids:
        try:
            run = find_trial_run(sweep.client, sweep.experiment_id, sweep.run_id, trial_id)
            if run is None or run.info.status == "FINISHED":
                continue
            sweep.client.set_tag(run.info.run_id, REASON_TAG, INTERRUPTED_REASON)
            sweep.client.set_tag(run.info.run_id, OUTCOME_TAG, "interrupted")
            if run.info.status != "KILLED":
                sweep.client.set_terminated(run.info.run_id, status="KILLED")
        except (MlflowException, OSError) as exc:
            logger.warning("could not close the run of interrupted trial %s (%s); it stays RUNNING until the sweep "
                           "is resumed", trial_id, first_line(exc))
            return
