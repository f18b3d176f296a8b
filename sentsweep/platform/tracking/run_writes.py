"""The driver's writes to MLflow, off Tune's event loop (:class:`Deliverer`). A dropped trial delivery is found again
in the sweep folder; a parent run's writes left at the end wait in :data:`PENDING_FILE` for a resume or ``sync``.
Every write is idempotent, so one delivered twice (an answer lost in an outage) changes nothing."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import queue
import shutil
import threading
import time
from collections.abc import Callable, Collection, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs
from mlflow import MlflowClient
from mlflow.entities import Metric, RunTag

from sentsweep.platform.location import write_whole
from sentsweep.platform.s3 import storage_error
from sentsweep.platform.tracking.reachability import store_answers
from sentsweep.platform.tracking.trial_runs import local_folder
from sentsweep.tracking.vocabulary import REASON_TAG, TERMINAL, find_trial_run, log_missing_params, log_protocols

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
    retry_at: float = float("-inf")

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
            if self.backoff.failures == 1:  # the first failure since a success
                log.warning("MLflow did not take a delivery (%s: %s); retried in %.0f s, from the sweep folder",
                            type(exc).__name__, str(exc).splitlines()[0][:200] if str(exc) else "", wait)
            return False
        self.backoff.succeeded()
        return True

    def _run(self) -> None:
        while True:
            try:
                self.run_one(*self._jobs.get())
            finally:
                self._jobs.task_done()

    def drain(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for the queued jobs; whether they all ran (a stuck daemon thread is left)."""
        with self._jobs.all_tasks_done:
            return self._jobs.all_tasks_done.wait_for(lambda: not self._jobs.unfinished_tasks, timeout_s)


PENDING_FILE = "mlflow_pending.json"
#: The folder of the sweep folder holding what the driver uploads (finalize's plots, evaluation, model).
UPLOADS_DIR = "uploads"

Write = dict[str, Any]


def _named(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(key, str) for key in value)


def _point(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 4 and isinstance(value[0], str)
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value[1:]))


def admissible(write: Write, runs: Collection[str], register: str | None) -> bool:
    """Whether a saved write acts on ``runs``, registers only ``register``, uploads only from the folder, and holds
    the fields :meth:`RunWrites.apply` reads, of their types: one that fails at every try would hold back every
    write after it."""
    target = write.get("run") if "run" in write else write.get("parent")
    if not isinstance(target, str) or target not in runs or not isinstance(write.get("op"), str) \
            or not isinstance(write.get("reason"), str | None):
        return False
    if "run" not in write and not isinstance(write.get("trial"), str):
        return False
    folder, path, tags = write.get("dir"), write.get("path"), write.get("tags")
    fields: dict[str, bool] = {
        "tags": _named(tags), "params": _named(write.get("params")),
        "metrics": isinstance(write.get("points"), list) and all(_point(p) for p in write["points"]),
        "protocols": isinstance(write.get("record"), dict),
        "artifacts": isinstance(folder, str) and isinstance(path, str) and folder.startswith(UPLOADS_DIR + "/")
        and ".." not in folder.split("/"),
        "register": isinstance(path, str) and isinstance(write.get("description"), str | None)
        and (tags is None or _named(tags)) and bool(register) and write.get("name") == register,
        "status": isinstance(write.get("status"), str), "running": True}
    return fields.get(write["op"], False)


class RunWrites:
    """Writes to runs of ``experiment_id``; those left at :meth:`flush` saved in the folder ``fs``, ``path``."""

    def __init__(self, client: MlflowClient, experiment_id: str, fs: pyarrow.fs.FileSystem, path: str) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.fs, self.path = fs, path
        self.pending: list[Write] = []
        self.registered: dict[str, str] = {}
        self._lock = threading.Lock()
        self._delivering = threading.Lock()  # one delivery at a time: the background one or a caller's
        self._deliverer = Deliverer(on_failure=lambda key: None)

    def put(self, write: Write) -> None:
        with self._lock:
            self.pending.append(write)
        self._deliverer.submit("writes", self.deliver)

    def upload(self, target: dict[str, str], local_dir: str | Path, artifact_path: str, *, kept_as: str | None = None,
               move: bool = False) -> None:
        """Keep a copy of ``local_dir`` under the folder's :data:`UPLOADS_DIR` (moved when ``move``), then queue
        its upload to ``target``: the copy outlives the session, so a later ``sync`` still has it."""
        relative = posixpath.join(UPLOADS_DIR, kept_as or artifact_path)
        kept = posixpath.join(self.path, relative)
        if isinstance(self.fs, pyarrow.fs.LocalFileSystem):
            shutil.rmtree(kept, ignore_errors=True)
            Path(kept).parent.mkdir(parents=True, exist_ok=True)
            (shutil.move if move else shutil.copytree)(local_dir, kept)  # a move: a rename on one file system
        else:
            self.fs.delete_dir_contents(kept, missing_dir_ok=True)
            pyarrow.fs.copy_files(str(local_dir), kept, source_filesystem=pyarrow.fs.LocalFileSystem(),
                                  destination_filesystem=self.fs)
        self.put({"op": "artifacts", **target, "dir": relative, "path": artifact_path})

    def deliver(self) -> int:
        """Deliver the waiting writes in order (the first failure raises); how many were delivered."""
        done = 0
        with self._delivering:
            while self.pending:  # others only append
                self.apply(self.pending[0])
                with self._lock:
                    self.pending.pop(0)
                done += 1
        return done

    def flush(self, timeout_s: float = 20.0) -> bool:
        """Deliver what waits for at most ``timeout_s``, then save what is left; whether MLflow has everything."""
        if self.pending and store_answers(self.client.tracking_uri):
            self._deliverer.submit("writes", self.deliver, force=True)
            self._deliverer.drain(timeout_s)
        with self._lock:
            left = list(self.pending)
        target = posixpath.join(self.path, PENDING_FILE)
        try:
            if left:
                write_whole(self.fs, self.path, PENDING_FILE, json.dumps(left).encode("utf-8"))
            elif self.fs.get_file_info(target).type == pyarrow.fs.FileType.File:
                self.fs.delete_file(target)
        except OSError as exc:
            raise storage_error("the writes MLflow has not taken could not be saved", target, exc) from exc
        return not left

    def load(self, runs: Collection[str], register: str | None = None) -> int:
        """Queue the writes an earlier session saved (before any new one); how many. Anyone who can write the folder
        can write the file, so only :func:`admissible` writes are kept."""
        saved = None
        with (contextlib.suppress(OSError, ValueError),
              self.fs.open_input_stream(posixpath.join(self.path, PENDING_FILE)) as stream):
            saved = json.loads(stream.readall())
        writes = [w for w in saved if isinstance(w, dict) and admissible(w, runs, register)] \
            if isinstance(saved, list) else []
        with self._lock:
            self.pending[:0] = writes
        return len(writes)

    def apply(self, write: Write) -> None:
        """Deliver one write: tags and artifacts are replaced, a metric point already held is skipped, a model is
        registered once per run, a status is set only when it differs."""
        op, client = write["op"], self.client
        if (run_id := write.get("run")) is None:
            run = find_trial_run(client, self.experiment_id, write["parent"], write["trial"])
            if run is None:  # the trial's run comes from the trials' deliveries: tried again later
                raise LookupError(f"no MLflow run of trial {write['trial']} yet")
            run_id = run.info.run_id
        if op == "tags":
            client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in write["tags"].items()])
        elif op == "params":
            log_missing_params(client, run_id, write["params"])
        elif op == "metrics":
            held: dict[str, set[tuple[int, float]]] = {}
            for key, *_ in write["points"]:
                held.setdefault(key, {(m.step, m.value) for m in client.get_metric_history(run_id, key)})
            client.log_batch(run_id, metrics=[Metric(key, float(value), int(stamp), int(step))
                                              for key, value, step, stamp in write["points"]
                                              if (int(step), float(value)) not in held[key]])
        elif op == "protocols":
            log_protocols(client, run_id, write["record"])
        elif op == "artifacts":
            with local_folder(self.fs, posixpath.join(self.path, write["dir"])) as local:
                client.log_artifacts(run_id, local, write["path"])
        elif op == "register":
            self._register(run_id, write)
        elif op in ("status", "running"):  # "status" ends the run, "running" reopens it
            run = client.get_run(run_id)
            if write.get("if_running") and run.info.status in TERMINAL:
                return
            if write.get("reason"):
                client.set_tag(run_id, REASON_TAG, write["reason"][:5000])
            elif write.get("clear_reason") and REASON_TAG in run.data.tags:
                client.delete_tag(run_id, REASON_TAG)
            if op == "running":
                client.update_run(run_id, status="RUNNING")
            elif run.info.status != write["status"]:
                client.set_terminated(run_id, status=write["status"])

    def _register(self, run_id: str, write: Write) -> None:
        """Register the run's model once (a version of it already held is reused), then describe the version."""
        import mlflow

        name = write["name"]
        query = f"name = '{name}' and run_id = '{run_id}'"
        if existing := self.client.search_model_versions(query):
            self.registered[name] = str(min(int(v.version) for v in existing))
        else:
            previous = mlflow.get_tracking_uri()
            mlflow.set_tracking_uri(self.client.tracking_uri)
            try:
                self.registered[name] = str(mlflow.register_model(f"runs:/{run_id}/{write['path']}", name).version)
            finally:
                mlflow.set_tracking_uri(previous)
            # a create whose answer a gateway lost, sent again by MLflow's client, made a twin: the first is kept
            made = sorted(int(v.version) for v in self.client.search_model_versions(query))
            for twin in made[1:]:
                self.client.delete_model_version(name, str(twin))
            if made:
                self.registered[name] = str(made[0])
        version = self.registered[name]
        if write.get("description"):
            self.client.update_model_version(name, version, description=write["description"])
        for key, value in (write.get("tags") or {}).items():
            self.client.set_model_version_tag(name, version, key, str(value))
