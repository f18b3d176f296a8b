"""Ending what a killed driver's local Ray left behind, at the next local start.

A driver that starts a local Ray (:func:`~sentsweep.platform.driver.ray_session.ray_session` without an address) is
the parent of Ray's GCS, raylet and helper processes; on Linux Ray starts them so that they die with it. The raylet's
own children do not: after a SIGKILL of the driver, Ray's ``DashboardAgent`` and ``RuntimeEnvAgent`` notice the
raylet gone within seconds, then wait up to 60 s for the dead GCS to take their error report before they exit,
listening on their loopback ports all the while (longer on a loaded machine). Ray offers no setting for this.

So the driver marks the session folder of each local Ray it starts with :data:`DRIVER_MARKER` (its pid and the
start time of its process). At the next local start, :func:`end_stale_sessions` looks at the marked session
folders beside the new one. For each whose driver is gone, it ends (SIGTERM, then SIGKILL after a grace period)
the processes of this user that hold a file of that folder open, which are that Ray's processes (their logs are
there), and removes the marker. Ray's logs stay. A folder without the marker (another program's Ray, or one
started with ``ray start``) is never touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

logger = logging.getLogger(__name__)

#: The file in a Ray session folder naming the sentsweep driver that started that Ray.
DRIVER_MARKER = "sentsweep_driver.json"
#: Seconds a stale process has to end after SIGTERM before it gets SIGKILL.
TERM_GRACE_S = 5.0


class ProcessView(Protocol):
    """What is read of a process (a :class:`psutil.Process` has it)."""

    pid: int

    def open_files(self) -> list: ...


@dataclass(frozen=True)
class Driver:
    """A driver process, by its pid and its start time (a pid alone may be reused)."""

    pid: int
    started: float


def this_driver() -> Driver:
    import psutil

    return Driver(os.getpid(), psutil.Process().create_time())


def driver_alive(driver: Driver) -> bool:
    """Whether the process ``driver`` names still runs (the same pid started at the same time)."""
    import psutil

    try:
        return abs(psutil.Process(driver.pid).create_time() - driver.started) < 1.0
    except psutil.Error:
        return False


def mark_session(session_dir: Path, driver: Driver) -> None:
    """Name ``driver`` in the session folder of the local Ray it started."""
    (session_dir / DRIVER_MARKER).write_text(json.dumps({"pid": driver.pid, "started": driver.started}))


def stale_sessions(root: Path, alive: Callable[[Driver], bool] = driver_alive) -> list[Path]:
    """The marked session folders under ``root`` (Ray's temp folder) whose driver is gone."""
    stale = []
    for marker in sorted(root.glob(f"session_*/{DRIVER_MARKER}")):
        if marker.parent.is_symlink():  # Ray's ``session_latest`` names a folder listed anyway
            continue
        try:
            named = json.loads(marker.read_text())
            driver = Driver(int(named["pid"]), float(named["started"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # half-written by a driver killed while writing it: looked at no further
        if not alive(driver):
            stale.append(marker.parent)
    return stale


def holders(session_dir: Path, processes: Iterable[ProcessView]) -> list[int]:
    """The pids of ``processes`` holding a file under ``session_dir`` open (those that cannot be read: skipped)."""
    inside = str(session_dir.resolve()) + os.sep
    found = []
    for process in processes:
        try:
            paths = [f.path for f in process.open_files()]
        except Exception:  # noqa: BLE001 - gone meanwhile, or another user's (psutil's AccessDenied)
            continue
        if any(path.startswith(inside) for path in paths):
            found.append(process.pid)
    return found


@dataclass
class Ender:
    """Ends processes by pid: SIGTERM, then SIGKILL to those still there after ``grace_s`` (injectable for tests)."""

    kill: Callable[[int, int], None] = os.kill
    exists: Callable[[int], bool] = lambda pid: _exists(pid)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    grace_s: float = TERM_GRACE_S

    def end(self, pids: list[int]) -> None:
        for pid in pids:
            self._signal(pid, signal.SIGTERM)
        deadline = self.clock() + self.grace_s
        while any(self.exists(pid) for pid in pids) and self.clock() < deadline:
            self.sleep(0.1)
        for pid in pids:
            if self.exists(pid):
                self._signal(pid, signal.SIGKILL)

    def _signal(self, pid: int, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.kill(pid, sig)


def _exists(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def own_processes() -> list[ProcessView]:
    """This user's processes, this one excepted."""
    import psutil

    uid = os.getuid()
    return [p for p in psutil.process_iter() if p.pid != os.getpid() and _uid(p) == uid]


def _uid(process: object) -> int | None:
    try:
        return process.uids().real  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - gone meanwhile
        return None


def end_stale_sessions(root: Path, *, alive: Callable[[Driver], bool] = driver_alive,
                       processes: Callable[[], Iterable[ProcessView]] = own_processes,
                       ender: Ender | None = None) -> dict[Path, list[int]]:
    """End the processes left by the local Rays under ``root`` whose driver is gone (module docstring); the pids
    ended, by session folder."""
    ended: dict[Path, list[int]] = {}
    stale = stale_sessions(root, alive)
    if not stale:
        return ended
    listed = list(processes())
    for session in stale:
        pids = holders(session, listed)
        if pids:
            (ender or Ender()).end(pids)
            logger.warning("ended %d process(es) of the local Ray a killed driver left (%s)", len(pids), session.name)
        (session / DRIVER_MARKER).unlink(missing_ok=True)
        ended[session] = pids
    return ended


def tidy_local_ray(session_dir: str | None) -> None:
    """Mark the session folder of the local Ray this driver started, and end what killed drivers' local Rays left
    beside it (:func:`end_stale_sessions`). Best effort: a failure is logged, and the sweep goes on."""
    if not session_dir:
        return
    try:
        session = Path(session_dir)
        mark_session(session, this_driver())
        end_stale_sessions(session.parent)
    except Exception as exc:  # noqa: BLE001 - tidying never stops a sweep
        logger.debug("could not tidy the local Ray sessions beside %s: %s", session_dir, exc)
