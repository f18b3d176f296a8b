"""Graceful stops: SIGTERM is handled as Ctrl+C is, so Tune saves its state and the sweep can be resumed.

Ray Tune (2.60, ``ray/tune/tune.py``) catches SIGINT (and SIGUSR1) while ``Tuner.fit`` runs: it starts no
new trial, ends the running ones at their next report, writes the experiment state one last time and
returns (a second SIGINT skips the save). SIGTERM gets none of this: ``ray.init`` installs a handler that
exits with status 1 (a local node also kills its Ray processes first), so ``sentsweep jobs stop``, ``ray job
stop`` or a pod eviction aborted a sweep without the save. :func:`graceful_stops` routes SIGTERM to the
SIGINT handler in force (Tune's during ``fit``, Python's ``KeyboardInterrupt`` elsewhere), so both signals
stop a sweep the same way. ``TUNE_DISABLE_SIGINT_HANDLER=1`` turns Tune's handler off, and with it the save.

During ``fit`` the first signal does not reach Tune's handler at once: :class:`StopSignals` hands it to its
:class:`~sentsweep.platform.driver.drain.Drain`, which lets the running trials checkpoint where they are for up to
``stop_grace_s`` seconds and then calls Tune's handler; a second signal calls it at once, a third (Tune's handler
has put Python's back) skips Tune's save.

What a stopped sweep leaves (:func:`sentsweep.platform.driver.sweep.run_sweep`): the trials' latest reported
checkpoints (at the step each reached, for the trials that drained within the grace period), the parent run KILLED with
``sentsweep.status=interrupted`` (:mod:`~sentsweep.platform.driver.sweep_state`), every unfinished trial's run KILLED
with the reason ``interrupted``, and :class:`SweepInterrupted`, which the CLI turns into exit status
:data:`INTERRUPTED_EXIT` and the resume command.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

from sentsweep.platform.location import folder_command
from sentsweep.platform.stops import ACTIVE

if TYPE_CHECKING:
    from sentsweep.platform.driver.drain import Drain

#: The exit status of a sweep stopped by SIGINT or SIGTERM after Tune saved its state: ``EX_TEMPFAIL``
#: (sysexits.h, "try again later"); ``sentsweep resume DIR`` continues it.
INTERRUPTED_EXIT = 75


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by a signal after Tune saved its state; :attr:`resume_command` continues it."""

    def __init__(self, sweep_dir: str, signal_name: str = "SIGINT", tracking_uri: str | None = None) -> None:
        self.sweep_dir = sweep_dir
        self.signal_name = signal_name
        self.tracking_uri = tracking_uri
        super().__init__(f"interrupted by {signal_name}; the sweep's state is saved; continue with: "
                         f"{self.resume_command}")

    @property
    def resume_command(self) -> str:
        return folder_command("resume", self.sweep_dir, self.tracking_uri)


class StopSignals:
    """Which stop signal arrived during a sweep (None: none); ``drain``: how the running trials get to checkpoint
    before Tune stops (set by the driver once it knows the sweep; None: Tune stops at the first signal)."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.drain: Drain | None = None
        #: Set (from the lock's heartbeat thread) when another driver took over the sweep's lock, or this one could
        #: not renew it (it gave it up): the line :class:`~sentsweep.platform.folder.lock.LockLost` carries.
        #: No drain then: the stop marker is in the sweep's folder, so writing it would stop the new holder's trials
        #: too; and nothing the driver keeps for the sweep (its trials' runs) is
        #: written any more (:func:`~sentsweep.platform.stops.superseded`).
        self.superseded: str | None = None

    def supersede(self, reason: str) -> None:
        """Another driver holds (or may take) the sweep now: stop at Tune's next step
        (:class:`~sentsweep.platform.driver.stopping.StopWatch`), touching nothing the new holder uses."""
        self.superseded = self.superseded or reason

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
        """``drain`` handles the first signal inside the block (its stop marker removed before and after: a marker
        stays in the folder until deleted)."""
        drain.reset_flag()
        self.drain = drain
        try:
            yield drain
        finally:
            self.drain = None
            if self.superseded is None:  # else the marker (if any) is the new holder's
                drain.reset_flag()

    def watch_sigint(self) -> None:
        """Record a SIGINT too, then hand it to :attr:`drain`, else to the handler in force (called once Tune
        installed its own, at the start of ``fit``: :class:`~sentsweep.platform.driver.stopping.StopWatch`)."""
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
    ACTIVE.append(stops)
    try:
        yield stops
    finally:
        ACTIVE.pop()
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

