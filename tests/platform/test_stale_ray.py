"""What a killed driver's local Ray leaves is ended at the next local start: the choice of sessions and processes on
fakes (an injected clock, no sleeps), and one real driver SIGKILLed with its Ray's agents still listening."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from sentsweep.platform.driver.ray_session import (
    DRIVER_MARKER,
    Driver,
    end_processes,
    end_stale_sessions,
    holders,
    mark_session,
    own_processes,
    stale_sessions,
)
from tools.harness.processes import REPO, repo_pythonpath

DEAD, ALIVE = Driver(101, 1.0), Driver(202, 2.0)


class FakeProcess:
    def __init__(self, pid: int, files: list[Path] | None) -> None:
        self.pid, self._files = pid, files

    def open_files(self) -> list:
        if self._files is None:
            raise PermissionError("another user's")  # what psutil's AccessDenied stands for
        return [SimpleNamespace(path=str(f)) for f in self._files]


def _sessions(root: Path) -> dict[str, Path]:
    folders = {name: root / f"session_{name}" for name in ("dead", "alive", "unmarked", "garbled", "dead2")}
    for folder in folders.values():
        (folder / "logs").mkdir(parents=True)
    mark_session(folders["dead"], DEAD)
    mark_session(folders["alive"], ALIVE)
    (folders["garbled"] / DRIVER_MARKER).write_text('{"pid": ')
    (root / "session_latest").symlink_to(folders["dead"])
    return folders


def test_only_marked_sessions_of_dead_drivers_are_stale(tmp_path: Path) -> None:
    folders = _sessions(tmp_path)
    assert stale_sessions(tmp_path, alive=lambda driver: driver == ALIVE) == [folders["dead"]]


def test_the_holders_of_a_sessions_files_are_found(tmp_path: Path) -> None:
    folders = _sessions(tmp_path)
    dead = folders["dead"]
    processes = [FakeProcess(1, [dead / "logs" / "dashboard_agent.log"]), FakeProcess(2, [dead.parent / "other"]),
                 FakeProcess(3, [folders["dead2"] / "logs" / "raylet.out"]),  # a name that begins alike
                 FakeProcess(4, None), FakeProcess(5, [Path("/dev/null"), dead / "logs" / "events" / "e.log"])]
    assert holders(dead, processes) == [1, 5]


def test_a_process_ignoring_sigterm_gets_sigkill_after_the_grace_period() -> None:
    ignoring = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(60)"
    polite = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    stubborn = subprocess.Popen([sys.executable, "-c", ignoring], stdout=subprocess.PIPE)
    polite.stdout.readline(), stubborn.stdout.readline()  # both started (the stubborn one ignores SIGTERM now)
    started = time.monotonic()
    end_processes([polite.pid, 2**22 + 1], grace_s=30.0)  # the second is no process
    assert time.monotonic() - started < 10 and not _running(polite.pid), "SIGTERM ended it: no grace waited out"
    started = time.monotonic()
    end_processes([stubborn.pid], grace_s=1.0)
    assert time.monotonic() - started >= 1.0 and stubborn.wait(timeout=10) == -signal.SIGKILL


def test_end_stale_sessions_ends_their_holders_and_drops_the_marker(tmp_path: Path) -> None:
    folders = _sessions(tmp_path)
    running = {1, 9}
    processes = [FakeProcess(1, [folders["dead"] / "logs" / "a.log"]), FakeProcess(9, [folders["alive"] / "x"])]
    ended = end_stale_sessions(tmp_path, alive=lambda driver: driver == ALIVE, processes=lambda: processes,
                               end=running.difference_update)
    assert ended == {folders["dead"]: [1]} and running == {9}
    assert not (folders["dead"] / DRIVER_MARKER).exists() and (folders["dead"] / "logs").is_dir()
    assert (folders["alive"] / DRIVER_MARKER).exists()
    assert end_stale_sessions(tmp_path, alive=lambda driver: driver == ALIVE, processes=lambda: processes,
                              end=running.difference_update) == {}, "done once"


# -- one real driver --------------------------------------------------------------------------------------------
DRIVER = """
import sys, time
from sentsweep.platform.driver.ray_session import ray_session
with ray_session():
    import ray
    print("session", ray.get_runtime_context().get_node_id(), flush=True)
    if sys.argv[1] == "wait":
        time.sleep(600)
"""


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    """A Ray temp folder of the test's own (short: Ray's socket paths must fit 107 characters); what still holds a
    file in it at the end was started by this test, and is ended by pid."""
    folder = Path(tempfile.mkdtemp(prefix="ssray-", dir="/tmp"))
    yield folder
    for session in folder.glob("ray/session_*"):
        if not session.is_symlink():
            for pid in holders(session, own_processes()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _driver(ray_tmp: Path, mode: str) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=repo_pythonpath(), RAY_TMPDIR=str(ray_tmp))
    return subprocess.Popen([sys.executable, "-c", DRIVER, mode], env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


@pytest.mark.slow
def test_the_next_local_start_ends_what_a_killed_drivers_ray_left(ray_tmp: Path) -> None:
    killed = _driver(ray_tmp, "wait")
    try:
        assert killed.stdout.readline().startswith("session "), "the driver started its Ray"
        (session,) = [p.parent for p in ray_tmp.glob(f"ray/session_*/{DRIVER_MARKER}") if not p.parent.is_symlink()]
        assert json.loads((session / DRIVER_MARKER).read_text())["pid"] == killed.pid
        deadline = time.monotonic() + 30
        while len(holders(session, own_processes())) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)  # the agents open their logs after init returns
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
    time.sleep(3)  # the raylet and the GCS die with the driver; the agents stay
    left = holders(session, own_processes())
    assert left, "the agents of the killed driver's Ray are still there"

    following = _driver(ray_tmp, "exit")
    assert following.wait(timeout=240) == 0
    assert not any(_running(pid) for pid in left), "the next local start ended them"
    assert not (session / DRIVER_MARKER).exists() and (session / "logs").is_dir()


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
