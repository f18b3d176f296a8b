"""The stop marker of a draining sweep: how a trial on any node learns that its sweep is stopping.

On the first SIGINT/SIGTERM the driver writes the marker (:mod:`sentsweep.platform.driver.interrupt`) and gives the
running trials a grace period (``stop_grace_s``) to checkpoint where they are before Tune stops them. The marker is the
file :data:`STOP_MARKER` in the sweep's experiment folder, on the folder's own file system (a local or shared
disk, or ``s3://``), so every trial that can write its checkpoints there can read it. A trial finds the folder
through its Tune storage (:func:`sentsweep._compat.ray.trial_storage`). The driver removes the marker when its
session of the sweep starts and when it ends.

A trial's training loop asks :meth:`StopFlag.requested` at every step; the folder is read at most every
:data:`CHECK_EVERY_S` seconds on a local disk, :data:`REMOTE_CHECK_EVERY_S` on an object store (one clock reading
per step otherwise). Once it has reported its checkpoint the trial waits in :meth:`StopFlag.wait` until Tune ends
its process, or the marker is gone. Ray is imported inside the methods only.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from sentsweep.trainables.report_keys import DRAINING_KEY

# A draining report (DRAINING_KEY) repeats the last evaluation's metric value, NaN before the first; schedulers and
# searchers skip it.
#: The stop marker's name in the experiment folder.
STOP_MARKER = "sentsweep_stop"
#: How often (seconds) a trial reads the marker on a local or shared disk, and on an object store (S3).
CHECK_EVERY_S = 2.0
REMOTE_CHECK_EVERY_S = 5.0


class StopCheck(Protocol):
    """What the training loop asks (:class:`StopFlag`): whether to stop (cheap, at every step), and the wait after
    its draining report."""

    def requested(self) -> bool: ...

    def wait(self) -> NoReturn: ...


def draining_report(step: int, metric: str, history: list[dict[str, float]],
                    best: float | None = None) -> dict[str, float]:
    """The metrics of a draining report at ``step``: the marker and ``metric`` repeating the last evaluation's value
    (NaN before the first: Tune requires the sweep's metric in every report), and ``best_METRIC``, the trial's best
    so far, which the progress lines of a resumed sweep read from the trial's last report."""
    last = history[-1].get(metric) if history else None
    report = {DRAINING_KEY: 1.0, "step": float(step), metric: float("nan") if last is None else float(last)}
    return report if best is None else {**report, f"best_{metric}": float(best)}


class StopFlag:
    """The stop marker of one sweep: :data:`STOP_MARKER` in the experiment folder ``folder`` on ``filesystem``
    (a :class:`pyarrow.fs.FileSystem`). ``check_every_s``: default by the file system's kind."""

    def __init__(self, filesystem: Any, folder: str, check_every_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.filesystem = filesystem
        self.path = posixpath.join(folder, STOP_MARKER)
        if check_every_s is None:
            check_every_s = CHECK_EVERY_S if filesystem.type_name == "local" else REMOTE_CHECK_EVERY_S
        self.check_every_s = check_every_s
        self._clock = clock
        self._next_read = float("-inf")

    @classmethod
    def for_this_trial(cls) -> StopFlag | None:
        """The marker of the sweep the calling Tune trial belongs to (None outside a trial)."""
        from sentsweep._compat.ray import trial_storage

        storage = trial_storage()
        if storage is None:
            return None
        return cls(storage.storage_filesystem, storage.experiment_fs_path)

    # -- the driver -------------------------------------------------------------------------------
    def raise_flag(self) -> None:
        """Write the marker (an ``OSError`` when the folder cannot be written)."""
        with self.filesystem.open_output_stream(self.path) as out:
            out.write(b"stop\n")

    def lower_flag(self) -> None:
        """Remove the marker (none there: nothing to do)."""
        import pyarrow.fs

        if self.filesystem.get_file_info(self.path).type != pyarrow.fs.FileType.NotFound:
            self.filesystem.delete_file(self.path)

    # -- a trial ----------------------------------------------------------------------------------
    def is_raised(self, unreadable: bool = False) -> bool:
        """Read the folder now; ``unreadable``: the answer when it cannot be read (False: training goes on)."""
        import pyarrow.fs

        try:
            return self.filesystem.get_file_info(self.path).type != pyarrow.fs.FileType.NotFound
        except Exception:  # the storage does not answer
            return unreadable

    def requested(self) -> bool:
        """Whether the sweep is stopping; reads the folder at most every ``check_every_s`` seconds."""
        now = self._clock()
        if now < self._next_read:
            return False
        self._next_read = now + self.check_every_s
        return self.is_raised()

    def wait(self, sleep: Callable[[float], None] = time.sleep) -> NoReturn:
        """After the draining report: idle until Tune stops this trial, which ends its process (the trial's thread
        is a daemon), or until the marker is gone (the driver's session ended); then end as Tune's own stop ends a
        function trainable (``SystemExit(0)``). A marker that cannot be read is still there: Tune counts a trial whose
        function ends as finished, and would never resume it."""
        while self.is_raised(unreadable=True):
            sleep(self.check_every_s)
        raise SystemExit(0)
