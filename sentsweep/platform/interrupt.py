"""Graceful stops: SIGTERM is handled as Ctrl+C is, so Tune saves its state and the sweep can be resumed.

Ray Tune (2.60, ``ray/tune/tune.py``) catches SIGINT (and SIGUSR1) while ``Tuner.fit`` runs: it starts no
new trial, ends the running ones at their next report, writes the experiment state one last time and
returns (a second SIGINT skips the save). SIGTERM gets none of this: ``ray.init`` installs a handler that
exits with status 1 (a local node also kills its Ray processes first), so ``sentsweep jobs stop``, ``ray job
stop`` or a pod eviction aborted a sweep without the save. :func:`graceful_stops` routes SIGTERM to the
SIGINT handler in force (Tune's during ``fit``, Python's ``KeyboardInterrupt`` elsewhere), so both signals
stop a sweep the same way. ``TUNE_DISABLE_SIGINT_HANDLER=1`` turns Tune's handler off, and with it the save.

What a stopped sweep leaves (:func:`sentsweep.platform.sweep.run_sweep`): the trials' latest reported
checkpoints (a trial loses at most the steps since its last report), the parent run KILLED with
``sentsweep.status=interrupted`` (:mod:`~sentsweep.platform.sweep_state`), every unfinished trial's run KILLED
with the reason ``interrupted``, and :class:`SweepInterrupted`, which the CLI turns into exit status
:data:`INTERRUPTED_EXIT` and the resume command.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ray.tune import ResultGrid

    from sentsweep.platform.storage import SweepLocation
    from sentsweep.platform.sweep_tracking import SweepRun

#: The exit status of a sweep stopped by SIGINT or SIGTERM after Tune saved its state: ``EX_TEMPFAIL``
#: (sysexits.h, "try again later"); ``sentsweep resume DIR`` continues it.
INTERRUPTED_EXIT = 75
#: The reason tag of an unfinished trial's run when its sweep was stopped.
INTERRUPTED_REASON = "interrupted"


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by a signal after Tune saved its state; :attr:`resume_command` continues it."""

    def __init__(self, sweep_dir: str, signal_name: str = "SIGINT") -> None:
        self.sweep_dir = sweep_dir
        self.signal_name = signal_name
        super().__init__(f"interrupted by {signal_name}; the sweep's state is saved; continue with: "
                         f"{self.resume_command}")

    @property
    def resume_command(self) -> str:
        return f"sentsweep resume {shlex.quote(self.sweep_dir)}"


class StopSignals:
    """Which stop signal arrived (None: none, or a SIGINT that Tune handled itself)."""

    def __init__(self) -> None:
        self.received: str | None = None

    @property
    def name(self) -> str:
        return self.received or "SIGINT"

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM: do what SIGINT does now (Tune's handler during ``fit``, else ``KeyboardInterrupt``)."""
        self.received = signal.Signals(signum).name
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler) and handler is not signal.default_int_handler:
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt(self.received)


@contextlib.contextmanager
def graceful_stops(stops: StopSignals) -> Iterator[StopSignals]:
    """SIGTERM handled by ``stops`` inside the block (the previous handler back after it).

    Enter it again after ``ray.init``, which installs its own SIGTERM handler. Outside the main thread
    (where Python allows no handler) it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield stops
        return
    previous = signal.signal(signal.SIGTERM, stops.handle)
    try:
        yield stops
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def unfinished_trials(results: ResultGrid, location: SweepLocation) -> list[str]:
    """The ids of the trials Tune's saved state holds as neither terminated nor errored (a stopped sweep)."""
    if results.num_terminated + results.num_errors >= len(results):
        return []
    from ray.tune import ExperimentAnalysis

    analysis = ExperimentAnalysis(location.uri if location.filesystem is None else location.fs_path,
                                  storage_filesystem=location.filesystem)
    return [t.trial_id for t in analysis.trials if t.status not in ("TERMINATED", "ERROR")]


def close_interrupted_trials(sweep: SweepRun, trial_ids: list[str]) -> None:
    """Close the runs of a stopped sweep's unfinished trials KILLED with the reason ``interrupted`` (a run
    that finished after Tune's last snapshot stays FINISHED: the resume reports it without training)."""
    from sentsweep.tracking.vocabulary import REASON_TAG, find_trial_run

    for trial_id in trial_ids:
        run = find_trial_run(sweep.client, sweep.experiment_id, sweep.run_id, trial_id)
        if run is None or run.info.status == "FINISHED":
            continue
        sweep.client.set_tag(run.info.run_id, REASON_TAG, INTERRUPTED_REASON)
        if run.info.status != "KILLED":
            sweep.client.set_terminated(run.info.run_id, status="KILLED")
