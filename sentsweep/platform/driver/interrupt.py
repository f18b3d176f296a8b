"""Graceful stops: SIGTERM is handled as Ctrl+C is, the running trials checkpoint first (:class:`Drain`), and Tune saves
its state so that the sweep can be resumed (docs/architecture.md, "Checkpoints")."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Any

from sentsweep.platform.folder.lock import LockLost
from sentsweep.platform.location import folder_command
from sentsweep.platform.results import is_draining
from sentsweep.platform.stops import ACTIVE
from sentsweep.trainables.stop_flag import StopFlag

if TYPE_CHECKING:
    from sentsweep.platform.location import SweepLocation
    from sentsweep.platform.tracking.parent_run import SweepRun

logger = logging.getLogger(__name__)

#: The exit status of a sweep stopped by SIGINT or SIGTERM after Tune saved its state: ``EX_TEMPFAIL``
#: (sysexits.h, "try again later"); ``sentsweep resume DIR`` continues it.
INTERRUPTED_EXIT = 75


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by a signal after Tune saved its state; its message ends with the command that continues it."""

    def __init__(self, sweep_dir: str, signal_name: str = "SIGINT", tracking_uri: str | None = None) -> None:
        super().__init__(f"interrupted by {signal_name}; the sweep's state is saved; continue with: "
                         f"{folder_command('resume', sweep_dir, tracking_uri)}")


class Drain:
    """The driver's side of draining a sweep for up to ``grace_s`` seconds (0: none); its marker goes in ``folder``."""

    def __init__(self, filesystem: Any, folder: str, grace_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.flag, self.grace_s, self._clock = StopFlag(filesystem, folder), grace_s, clock
        self._trials: list[Any] = []
        self._waiting: set[str] = set()
        self._drained: set[str] = set()
        self._deadline: float | None = None
        self._stop_tune: Callable[[], None] | None = None
        self._announced = False

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
        """At the end of each step of Tune's loop: stop Tune once the drain is complete or overdue."""
        self._trials = trials
        if self._stop_tune is None:
            return
        pending = [t for t in trials if t.trial_id in self._waiting and t.status == "RUNNING"
                   and (t.trial_id not in self._drained or t.is_saving)]
        if not self._announced:
            self._announced = True
            logger.warning("stopping: %d running trial(s) checkpoint where they are (up to %.0f s); "
                           "send the signal again to stop now", len(pending), self.grace_s)
        if pending and (self._deadline is None or self._clock() < self._deadline):  # not overdue
            return
        if pending:
            logger.warning("stopping: %d trial(s) did not checkpoint within %.0f s (stop_grace_s): they continue "
                           "from their last checkpoint", len(pending), self.grace_s)
        stop_tune, self._stop_tune = self._stop_tune, None
        stop_tune()

    def reset_flag(self) -> None:
        try:
            self.flag.lower_flag()
        except Exception as exc:  # best-effort: the marker is the sweep's, a resume removes it first
            logger.warning("could not remove the stop marker %s: %s", self.flag.path, exc)


class StopSignals:
    """Which stop signal arrived during a sweep (None: none); ``drain``: how the running trials get to checkpoint
    before Tune stops (set by the driver once it knows the sweep; None: Tune stops at the first signal)."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.drain: Drain | None = None
        #: Set from the lock's heartbeat thread once another driver holds the sweep (the line of ``LockLost``). No
        #: drain then (the stop marker would stop the new holder's trials too), and the trials' runs are left alone.
        self.superseded: str | None = None

    def supersede(self, reason: str) -> None:
        """Another driver holds (or may take) the sweep now: stop at Tune's next step, touching nothing of its."""
        self.superseded = self.superseded or reason

    def refuse_if_superseded(self, exc: BaseException | None = None) -> None:
        """Stop here with :class:`LockLost`, leaving the sweep's runs to the new holder (``exc``: what ended it)."""
        if isinstance(exc, LockLost):
            raise exc
        if self.superseded is not None:
            raise LockLost(self.superseded) from exc

    @property
    def name(self) -> str:
        return self.received or "SIGINT"

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM: do what SIGINT does now (Tune's handler during ``fit``, else ``KeyboardInterrupt``)."""
        self.received = self.received or signal.Signals(signum).name
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler) and handler is not signal.default_int_handler:
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt(self.received)

    @contextlib.contextmanager
    def draining(self, drain: Drain) -> Iterator[Drain]:
        """``drain`` handles the first signal inside the block (its stop marker removed before and after)."""
        drain.reset_flag()
        previous, self.drain = self.drain, drain
        try:
            yield drain
        finally:
            self.drain = previous
            if self.superseded is None:  # else the marker (if any) is the new holder's
                drain.reset_flag()

    def draining_in(self, filesystem: Any, folder: str) -> contextlib.AbstractContextManager[Drain | None]:
        """While a further Tune experiment of the sweep runs in ``folder`` on ``filesystem`` (the confirmation
        stage), a drain writes its marker there, where that experiment's trials read it; without a drain, none."""
        if self.drain is None:
            return contextlib.nullcontext()
        return self.draining(Drain(filesystem, folder, self.drain.grace_s))

    def watch_sigint(self) -> None:
        """Record a SIGINT too, then hand it to :attr:`drain`, else to the handler in force (called once Tune
        installed its own, at the start of ``fit``)."""
        if threading.current_thread() is not threading.main_thread():
            return
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler) or handler is signal.default_int_handler:
            return  # Tune's handler is off (TUNE_DISABLE_SIGINT_HANDLER): a SIGINT raises KeyboardInterrupt

        def on_sigint(signum: int, frame: FrameType | None) -> None:
            self.received = self.received or "SIGINT"
            if self.drain is not None and self.drain.begin(lambda: handler(signum, frame)):
                return  # the drain calls Tune's handler once the trials checkpointed (or a signal comes again)
            handler(signum, frame)

        signal.signal(signal.SIGINT, on_sigint)


def without_tunes_stop_lines(record: logging.LogRecord) -> bool:
    """A log filter dropping Ray Tune's own lines about a stop: its hint after it (``Resume experiment with:
    Tuner.restore(...)``) would lose the sweep's state, where the driver prints ``sentsweep resume``; its "Stop signal
    received ... Press CTRL+C to skip" comes once the trials drained, after the driver's own line said so."""
    message = record.getMessage()
    return "Tuner.restore(" not in message and not message.startswith("Stop signal received")


def one_line_for_a_racing_save(record: logging.LogRecord) -> bool:
    """A log filter that turns Tune's traceback for a state upload that met a temporary file renamed under it (the
    searcher's own atomic save, ``.tmp-searcher-state-...``) into one warning line: nothing is lost, since Tune
    uploads the whole state again at its next save."""
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, FileNotFoundError) and "-tmp-" in str(exc):
        record.msg, record.args, record.exc_info, record.exc_text = (
            "a save of Tune's state met a file renamed while it was copied; the next save copies it again", (),
            None, None)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
    return True


def hide_tunes_stop_lines() -> None:
    """Install :func:`without_tunes_stop_lines` on Ray Tune's logger and :func:`one_line_for_a_racing_save` on its
    experiment state's (``addFilter`` adds a filter once)."""
    logging.getLogger("ray.tune.tune").addFilter(without_tunes_stop_lines)
    logging.getLogger("ray.tune.execution.experiment_state").addFilter(one_line_for_a_racing_save)


@contextlib.contextmanager
def graceful_stops(stops: StopSignals) -> Iterator[StopSignals]:
    """SIGTERM handled by ``stops`` inside the block; enter it again after ``ray.init``, which installs its own
    SIGTERM handler. Outside the main thread (where Python allows no handler) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield stops
        return
    previous = signal.signal(signal.SIGTERM, stops.handle)
    ACTIVE.append(stops)
    try:
        yield stops
    finally:
        ACTIVE.pop()
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def unfinished_trials(location: SweepLocation) -> list[str]:
    """The trials Tune's saved experiment state holds as neither terminated nor errored (after a SIGINT, ``fit``
    returns with its in-memory trials all TERMINATED by its cleanup)."""
    from sentsweep.platform.driver.resume import ENDED, snapshot_trials

    return [t.trial_id for t in snapshot_trials(*location.resolve()) or [] if t.status not in ENDED]


def close_interrupted_trials(sweep: SweepRun, trial_ids: list[str]) -> None:
    """End the runs of a stopped sweep's unfinished trials KILLED (a run that finished after Tune's last snapshot
    stays FINISHED). A stop within an eviction's grace period must end however MLflow is: when it does not answer,
    the runs stay RUNNING with a warning, and the resume reattaches them."""
    from mlflow.exceptions import MlflowException

    from sentsweep.platform.tracking.reachability import first_line, store_answers
    from sentsweep.tracking.vocabulary import INTERRUPTED_REASON, OUTCOME_TAG, REASON_TAG, find_trial_run

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
