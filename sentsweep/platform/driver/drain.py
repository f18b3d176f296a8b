"""Draining a stopping sweep: running trials checkpoint at the step they reached before Tune stops them.

Ray Tune (2.60) cannot ask a function trainable for a checkpoint: ``FunctionTrainable.save_checkpoint`` returns the
last one the function reported, and a checkpoint reported after Tune's final experiment snapshot is not in the
saved state. So the trials are asked before Tune is told to stop. On the first SIGINT/SIGTERM during ``fit``
(:class:`~sentsweep.platform.driver.interrupt.StopSignals`), :meth:`Drain.begin` writes the stop marker into the sweep's
experiment folder (:class:`~sentsweep.trainables.stop_flag.StopFlag`); every running trial's loop notices it within
a few seconds (:data:`~sentsweep.trainables.stop_flag.CHECK_EVERY_S`), writes a checkpoint at its current step and
reports it marked :data:`~sentsweep.trainables.stop_flag.DRAINING_KEY` (no checkpoint when it has made no step since its
last one), then waits. Tune registers each checkpoint as it registers any report's; once every trial that was
running has drained (its checkpoint saved), or the grace period ``stop_grace_s`` has passed, :meth:`Drain.step`
calls Tune's SIGINT handler: Tune saves its experiment state (which now holds those checkpoints) and stops, as
after a plain Ctrl+C. A second signal during the grace period stops Tune at once (a third skips its save).
``stop_grace_s: 0`` turns draining off.

A draining report is not an evaluation: :func:`is_draining` and :func:`evaluation_result` let the scheduler (ASHA)
and the searcher (Optuna) skip it and count evaluations as the trial counts them, not Tune's reports
(:mod:`sentsweep.platform.search.searcher`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from sentsweep.platform.results import is_draining
from sentsweep.trainables.stop_flag import StopFlag

logger = logging.getLogger(__name__)


class Drain:
    """The driver's side of draining one sweep for up to ``grace_s`` seconds (0: no draining)."""

    def __init__(self, filesystem: Any, folder: str, grace_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``filesystem`` and ``folder``: the sweep's experiment folder (:meth:`SweepLocation.resolve`), where the
        stop marker goes."""
        self.flag = StopFlag(filesystem, folder)
        self.grace_s = grace_s
        self._clock = clock
        self._trials: list[Any] = []
        self._waiting: set[str] = set()
        self._drained: set[str] = set()
        self._deadline: float | None = None
        self._stop_tune: Callable[[], None] | None = None
        self._announced = False

    @property
    def draining(self) -> bool:
        return self._stop_tune is not None

    def begin(self, stop_tune: Callable[[], None]) -> bool:
        """The first stop signal: write the marker and wait for the running trials (True); later signals, a zero grace
        period or no running trial: False (the caller stops Tune now)."""
        if self._deadline is not None:
            self._stop_tune = None  # a second signal: Tune is stopped by the caller, not again by step()
            return False
        self._deadline = self._clock() + self.grace_s
        self._waiting = {t.trial_id for t in self._trials if t.status == "RUNNING"}
        if self.grace_s <= 0 or not self._waiting:
            return False
        try:
            self.flag.raise_flag()
        except Exception as exc:  # the folder cannot be written: stop as without draining
            logger.warning("stopping without draining the trials (the stop marker could not be written: %s)", exc)
            return False
        self._stop_tune = stop_tune
        return True

    def on_result(self, trial_id: str, result: Mapping[str, Any]) -> None:
        if is_draining(result):
            self._drained.add(trial_id)

    def step(self, trials: list[Any]) -> None:
        """Called at the end of each step of Tune's loop: stop Tune once the drain is complete or overdue."""
        self._trials = trials
        if self._stop_tune is None:
            return
        pending = [t for t in trials if t.trial_id in self._waiting and t.status == "RUNNING"
                   and (t.trial_id not in self._drained or t.is_saving)]
        if not self._announced:
            self._announced = True
            logger.warning("stopping: %d running trial(s) checkpoint where they are (up to %.0f s); "
                           "send the signal again to stop now", len(pending), self.grace_s)
        overdue = self._deadline is not None and self._clock() >= self._deadline
        if pending and not overdue:
            return
        if pending:
            logger.warning("stopping: %d trial(s) did not checkpoint within %.0f s (stop_grace_s): they continue "
                           "from their last checkpoint", len(pending), self.grace_s)
        stop_tune, self._stop_tune = self._stop_tune, None
        stop_tune()

    def reset_flag(self) -> None:
        """Remove the marker (a stale one of an earlier session, or this session's at its end)."""
        try:
            self.flag.lower_flag()
        except Exception as exc:  # best-effort: the marker is the sweep's, a resume removes it first
            logger.warning("could not remove the stop marker %s: %s", self.flag.path, exc)
