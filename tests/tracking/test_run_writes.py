"""The driver's own writes: delivered in order and idempotent, saved in the folder when MLflow does not answer,
and, read back from a folder anyone may have written, kept only within the sweep's runs (real MLflow sqlite)."""

from __future__ import annotations

import contextlib
import json
import resource
import signal
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.errors import StorageError
from sentsweep.platform.tracking.run_writes import PENDING_FILE, UPLOADS_DIR, RunWrites, admissible


def test_writes_are_delivered_in_order_and_a_second_delivery_changes_nothing(tracking_uri: str, tmp_path: Path):
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("writes")
    run_id = client.create_run(experiment).info.run_id
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "a.csv").write_text("x\n1\n")
    writes = RunWrites(client, experiment, pyarrow.fs.LocalFileSystem(), str(tmp_path / "sweep"))
    writes.pending.extend([{"op": "tags", "run": run_id, "tags": {"k": "v"}},
                           {"op": "metrics", "run": run_id, "points": [["best", 0.5, 0, 7], ["best", 0.7, 1, 7]]},
                           {"op": "status", "run": run_id, "status": "FINISHED", "reason": "done"}])
    saved = [*writes.pending, {"op": "artifacts", "run": run_id, "dir": f"{UPLOADS_DIR}/plots", "path": "plots"}]
    writes.upload({"run": run_id}, tmp_path / "plots", "plots")  # kept in the folder, then queued
    assert (tmp_path / "sweep" / UPLOADS_DIR / "plots" / "a.csv").is_file()
    assert writes.flush(30.0), "delivered in the background, nothing left to save"
    assert not (tmp_path / "sweep" / PENDING_FILE).exists()
    writes.pending.extend(saved)  # delivered again: an answer lost in an outage
    assert writes.deliver() == 4
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.tags["k"] == "v"
    assert sorted((m.step, m.value) for m in client.get_metric_history(run_id, "best")) == [(0, 0.5), (1, 0.7)]
    assert [f.path for f in client.list_artifacts(run_id, "plots")] == ["plots/a.csv"]


def test_what_waits_when_mlflow_does_not_answer_is_saved_and_loaded_again(tmp_path: Path) -> None:
    down = MlflowClient("http://127.0.0.1:9")  # nothing listens there: the probe gets no answer at once
    writes = RunWrites(down, "1", pyarrow.fs.LocalFileSystem(), str(tmp_path))
    writes.put({"op": "tags", "run": "parent", "tags": {"k": "v"}})
    assert writes.flush(30.0) is False
    saved = json.loads((tmp_path / PENDING_FILE).read_text())
    assert saved == [{"op": "tags", "run": "parent", "tags": {"k": "v"}}]
    again = RunWrites(down, "1", pyarrow.fs.LocalFileSystem(), str(tmp_path))
    assert again.load({"parent"}) == 1 and again.pending == saved


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes past ``limit`` bytes fail as a full disk fails them (EFBIG, a short write, an ``OSError``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_saving_again_on_a_full_disk_leaves_the_earlier_saved_writes(tmp_path: Path) -> None:
    """The saved writes are the sweep's end, its registration: a save that fails part-way keeps the earlier file,
    and says which file in one line."""
    down = MlflowClient("http://127.0.0.1:9")
    writes = RunWrites(down, "1", pyarrow.fs.LocalFileSystem(), str(tmp_path))
    writes.put({"op": "status", "run": "parent", "status": "FINISHED", "reason": None})
    assert writes.flush(0.0) is False
    earlier = (tmp_path / PENDING_FILE).read_bytes()
    writes.put({"op": "tags", "run": "parent", "tags": {"k": "v" * 20_000}})
    with file_size_limit(4096), pytest.raises(StorageError, match=PENDING_FILE):
        writes.flush(0.0)
    assert (tmp_path / PENDING_FILE).read_bytes() == earlier
    again = RunWrites(down, "1", pyarrow.fs.LocalFileSystem(), str(tmp_path))
    assert again.load({"parent"}) == 1


def test_saved_writes_outside_the_sweeps_runs_are_not_loaded() -> None:
    runs, register = {"parent", "stage"}, "toy-model"
    assert admissible({"op": "tags", "run": "parent", "tags": {}}, runs, register)
    assert admissible({"op": "tags", "parent": "stage", "trial": "t1", "tags": {}}, runs, register)
    assert not admissible({"op": "tags", "run": "another-teams-run", "tags": {}}, runs, register)
    assert not admissible({"op": "tags", "parent": "elsewhere", "trial": "t1", "tags": {}}, runs, register)
    assert not admissible({"op": "register", "run": "parent", "name": "their-model", "path": "m"}, runs, register)
    assert admissible({"op": "register", "run": "parent", "name": "toy-model", "path": "m"}, runs, register)
    assert not admissible({"op": "artifacts", "run": "parent", "dir": "/home/user/.ssh", "path": "x"}, runs, register)
    assert not admissible({"op": "artifacts", "run": "parent", "dir": f"{UPLOADS_DIR}/../../x", "path": "x"}, runs,
                          register)
    assert not admissible({"op": "delete", "run": "parent"}, runs, register)


def test_saved_writes_missing_what_they_need_are_not_loaded(tmp_path: Path) -> None:
    """A write that would fail at every delivery would hold back every write saved after it (the sweep's end, its
    registration); one whose run is no name would stop the loading itself."""
    malformed = [{"op": "tags", "run": "parent", "tags": "k=v"},
                 {"op": ["tags"], "run": "parent", "tags": {}},
                 {"op": "tags", "run": ["parent"], "tags": {}},
                 {"op": "tags", "parent": "parent", "tags": {}},
                 {"op": "metrics", "run": "parent", "points": [["best", "high", 0, 7]]},
                 {"op": "register", "run": "parent", "name": "toy-model", "path": None},
                 {"op": "status", "run": "parent", "status": "FINISHED", "reason": ["done"]}]
    kept = [{"op": "metrics", "run": "parent", "points": [["best", 0.5, 0, 7]]},
            {"op": "register", "run": "parent", "name": "toy-model", "path": "m"},
            {"op": "status", "run": "parent", "status": "FINISHED", "reason": None}]
    (tmp_path / PENDING_FILE).write_text(json.dumps([*malformed, *kept]))
    writes = RunWrites(MlflowClient("http://127.0.0.1:9"), "1", pyarrow.fs.LocalFileSystem(), str(tmp_path))
    assert writes.load({"parent"}, "toy-model") == len(kept) and writes.pending == kept
