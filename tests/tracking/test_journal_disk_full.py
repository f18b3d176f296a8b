"""A full disk never fails a trial or a sweep through tracking: an append the disk cuts short leaves no fragment, and
the entries a journal refused are kept in memory and written, in order, once the disk takes them again.

The full disk is a journal file whose writes fail with ``ENOSPC`` once a given number of bytes went through (the
real file below it, the real MLflow client and sqlite store)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from sentsweep.platform.tracking_journals import DriverJournals
from sentsweep.tracking.journal import PARENT_JOURNAL, Journal, metric_points
from sentsweep.tracking.replay import MAX_UNWRITTEN, Outbox, Reachability, Replayer, Unwritten
from sentsweep.tracking.run_scope import SweepScope


class FullDisk:
    """Opens journal files for appending on a disk with ``room`` bytes left (None: room enough)."""

    def __init__(self, room: int | None = None) -> None:
        self.room = room

    def __call__(self, path: Path) -> Any:
        return _FileOnFullDisk(open(path, "ab", buffering=0), self)


class _FileOnFullDisk:
    """An unbuffered file whose writes stop at the disk's room: a short write, then ``ENOSPC``."""

    def __init__(self, raw: Any, disk: FullDisk) -> None:
        self.raw, self.disk = raw, disk

    def write(self, data: bytes) -> int:
        if self.disk.room is None:
            return self.raw.write(data)
        if self.disk.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = self.raw.write(bytes(data[:self.disk.room]))
        self.disk.room -= written
        return written

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self.raw.seek(offset, whence)

    def fileno(self) -> int:
        return self.raw.fileno()

    def __enter__(self) -> _FileOnFullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()


@pytest.fixture(autouse=True)
def _forget_held_entries():
    yield
    Unwritten._by_path.clear()
    Unwritten._warned = False
    Unwritten._dropped = 0
    Reachability._by_uri.clear()


def _metrics(step: int) -> dict[str, Any]:
    return {"op": "metrics", "points": metric_points({"loss": 1.0 / step}, step, 1000 + step)}


def test_an_append_the_disk_cuts_short_leaves_no_fragment_before_the_next(tmp_path: Path) -> None:
    path = tmp_path / "tracking-journal.jsonl"
    disk = FullDisk()
    journal = Journal(path, opener=disk)
    journal.append(_metrics(1))
    before = path.read_bytes()
    disk.room = 10
    with pytest.raises(OSError) as raised:
        journal.append(_metrics(2))
    assert raised.value.errno == errno.ENOSPC
    assert path.read_bytes() == before, "a fragment of the failed entry was left in the journal"
    disk.room = None
    journal.append(_metrics(3))  # the same writer: its torn-line check ran at its first append only
    assert [e["points"][0][3] for e in Journal(path).entries()] == [1, 3]


def test_a_full_disk_fails_no_put_and_what_it_refused_is_written_later(tracking_uri: str, tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    path = tmp_path / "trial" / "tracking-journal.jsonl"
    disk = FullDisk(room=0)
    outbox = Outbox(Journal(path, opener=disk), Replayer(client, SweepScope(experiment)), tracking_uri)
    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        assert outbox.put({"op": "open", "experiment_id": experiment, "run_name": "t1"}, _metrics(1)) is False
        assert outbox.put(_metrics(2)) is False  # a trial goes on
        assert caplog.text.count("keeping its entries in memory") == 1
        assert Journal(path).entries() == [] and outbox.run_id is None
        disk.room = None  # the disk takes entries again
        assert outbox.put(_metrics(3)) is True
    assert "take entries again" in caplog.text
    assert [e["op"] for e in Journal(path).entries()] == ["open", "metrics", "metrics", "metrics"]
    history = client.get_metric_history(outbox.run_id, "loss")
    assert [m.step for m in history] == [1, 2, 3]


def test_the_driver_writes_what_a_full_disk_refused_at_its_next_replay(tracking_uri: str, tmp_path: Path) -> None:
    """The driver makes a new outbox per call: the refused entries belong to the journal file, not to the outbox."""
    client = MlflowClient(tracking_uri=tracking_uri)
    run_id = client.create_run(client.create_experiment("e")).info.run_id
    folder = tmp_path / "tracking-journals"
    folder.mkdir()
    scope = SweepScope(client.get_run(run_id).info.experiment_id, run_id)
    full = Outbox(Journal(folder / PARENT_JOURNAL, run_id=run_id, opener=FullDisk(room=0)), Replayer(client, scope),
                  tracking_uri)
    assert full.put({"op": "tags", "tags": {"sentsweep.status": "finished"}}) is False
    assert DriverJournals(tracking_uri, folder, scope).replay().pending == 0
    assert client.get_run(run_id).data.tags["sentsweep.status"] == "finished"
    assert [e["op"] for e in Journal(folder / PARENT_JOURNAL).entries()] == ["tags"]


def test_what_a_full_disk_refuses_is_bounded_the_oldest_metrics_going_first(tracking_uri: str, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    outbox = Outbox(Journal(tmp_path / "journal.jsonl", opener=FullDisk(room=0)), Replayer(client, SweepScope("0")),
                    tracking_uri)
    outbox.put({"op": "open", "experiment_id": "0", "run_name": "t1"},
               *[_metrics(step) for step in range(1, MAX_UNWRITTEN + 6)])
    [held] = Unwritten.held(tmp_path).values()
    assert len(held) == MAX_UNWRITTEN
    assert held[0]["op"] == "open" and held[1]["points"][0][3] == 7


def test_a_new_driver_journal_whose_state_the_disk_refuses_keeps_its_run(tracking_uri: str, tmp_path: Path) -> None:
    """The parent's journal is created with its run id (its state): when that state cannot be written, the driver goes
    on, and the state is written with the run before the journal's first entry."""
    client = MlflowClient(tracking_uri=tracking_uri)
    run_id = client.create_run(client.create_experiment("e")).info.run_id
    folder = tmp_path / "tracking-journals"
    state = folder / (PARENT_JOURNAL + ".state")
    state.mkdir(parents=True)  # nothing can be written there (an OSError, as on a full disk)
    scope = SweepScope(client.get_run(run_id).info.experiment_id, run_id)
    outbox = Outbox(Journal(folder / PARENT_JOURNAL, run_id=run_id), Replayer(client, scope), tracking_uri)
    assert outbox.put({"op": "tags", "tags": {"sentsweep.status": "finished"}}) is False
    state.rmdir()  # room again
    Reachability._by_uri.clear()  # reading a state that is a folder failed too (a full disk does not do that)
    assert DriverJournals(tracking_uri, folder, scope).replay().pending == 0
    assert client.get_run(run_id).data.tags["sentsweep.status"] == "finished"
