"""Deliveries to MLflow off Tune's event loop: a bounded queue, one thread, and a back-off after a failure.

A dropped job loses nothing: its data is in the sweep folder, and the next job of its key delivers it from there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field

log = logging.getLogger("sentsweep.tracking")

Job = Callable[[], None]

#: MLflow's HTTP retries in the driver: a call to a dead server fails in seconds, and the back-off takes over.
DRIVER_RETRIES = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                  "MLFLOW_HTTP_REQUEST_TIMEOUT": "30"}


@contextlib.contextmanager
def quick_failures(environ: MutableMapping[str, str] | None = None) -> Iterator[None]:
    """:data:`DRIVER_RETRIES` in ``environ`` (default: this process's) for the block, except where set."""
    environ = os.environ if environ is None else environ
    added = {name: value for name, value in DRIVER_RETRIES.items() if name not in environ}
    environ.update(added)
    try:
        yield
    finally:
        for name in added:
            environ.pop(name, None)


#: Runs a function (a sweep's run and resume) under :func:`quick_failures`.
failing_quickly = quick_failures()


@dataclass
class Backoff:
    """When the next delivery may be tried: ``wait = min(max_s, first_s * 2**(failures - 1))`` after a failure."""

    first_s: float = 5.0
    max_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    failures: int = 0
    retry_at: float = field(default=float("-inf"))

    def allows(self) -> bool:
        return self.clock() >= self.retry_at

    def failed(self) -> float:
        self.failures += 1
        wait = min(self.max_s, self.first_s * 2 ** (self.failures - 1))
        self.retry_at = self.clock() + wait
        return wait

    def succeeded(self) -> None:
        self.failures = 0
        self.retry_at = float("-inf")


class Deliverer:
    """Runs submitted jobs in order on a daemon thread; a job that raises, or one dropped, reports its key."""

    def __init__(self, on_failure: Callable[[str], None], backoff: Backoff | None = None, capacity: int = 1000) -> None:
        self.on_failure = on_failure
        self.backoff = backoff or Backoff()
        self._jobs: queue.Queue[tuple[str, Job, bool]] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._warned = False

    def submit(self, key: str, job: Job, *, force: bool = False) -> bool:
        """Queue ``job`` without waiting; False (and ``on_failure(key)``) when dropped; ``force``: even backed off."""
        try:
            if not force and not self.backoff.allows():
                raise queue.Full
            self._jobs.put_nowait((key, job, force))
        except queue.Full:
            self.on_failure(key)
            return False
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="sentsweep-mlflow", daemon=True)
            self._thread.start()
        return True

    def run_one(self, key: str, job: Job, force: bool = False) -> bool:
        if not force and not self.backoff.allows():
            self.on_failure(key)
            return False
        try:
            job()
        except Exception as exc:  # noqa: BLE001 - MLflow down or refusing: the folder keeps the data
            wait = self.backoff.failed()
            self.on_failure(key)
            if not self._warned:
                log.warning("MLflow did not take a delivery (%s: %s); retried in %.0f s, from the sweep folder",
                            type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "", wait)
                self._warned = True
            return False
        self.backoff.succeeded()
        self._warned = False
        return True

    def _run(self) -> None:
        while True:
            try:
                self.run_one(*self._jobs.get())
            finally:
                self._jobs.task_done()

    def drain(self, timeout_s: float, clock: Callable[[], float] = time.monotonic,
              poll: Callable[[float], None] = time.sleep) -> bool:
        """Wait at most ``timeout_s`` for the queued jobs; whether they all ran (a stuck daemon thread is left)."""
        deadline = clock() + timeout_s
        while self._jobs.unfinished_tasks:
            if clock() >= deadline:
                return False
            poll(0.05)
        return True
