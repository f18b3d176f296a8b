"""Free loopback ports, waiting for a port, ending a process group this harness started, and the PYTHONPATH a
child process of the tests needs."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"
#: The repository root (what a child process needs on PYTHONPATH to import sentsweep, bench, tools and tests).
REPO = Path(__file__).resolve().parents[2]


def repo_pythonpath() -> str:
    """The repository root first, then this process's PYTHONPATH (for a child process a test or a bench starts)."""
    return os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)


class ServiceError(RuntimeError):
    """A service did not start (the message ends with the tail of its log)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def log_tail(log: Path, chars: int = 3000) -> str:
    try:
        return log.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def wait_for_port(port: int, process: subprocess.Popen, log: Path, *, timeout: float, what: str) -> None:
    """Until something accepts connections on ``port``; :class:`ServiceError` when ``process`` exits first or
    ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise ServiceError(f"{what} exited with {process.returncode}:\n{log_tail(log)}")
        with socket.socket() as sock:
            sock.settimeout(1.0)
            if sock.connect_ex((LOOPBACK, port)) == 0:
                return
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} did not listen on {LOOPBACK}:{port} within {timeout:.0f} s:\n{log_tail(log)}")
        time.sleep(0.2)


def end_group(process: subprocess.Popen, *, grace: float = 30.0, first: signal.Signals = signal.SIGTERM) -> None:
    """``first`` (SIGTERM) to ``process`` (started with ``start_new_session=True``), SIGKILL to its whole group
    when it does not exit within ``grace`` s, then SIGKILL to whatever of the group is left (children it did
    not reap)."""
    group = process.pid
    if process.poll() is None:
        process.send_signal(first)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            process.wait(timeout=10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.3)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
