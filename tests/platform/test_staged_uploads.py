"""The driver's staged uploads (copies in ``tracking-journals/staged/`` that its journals upload) leave nothing behind:
a copy that fails leaves no folder, and a staged folder no journal names is removed at the next replay."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.sweep_tracking import SweepRun
from sentsweep.platform.tracking_journals import remove_orphan_staged, replay_sweep_journals
from sentsweep.tracking.journal import DRIVER_JOURNALS, PARENT_JOURNAL, STAGED, Journal
from sentsweep.tracking.replay import Reachability, Unwritten


@pytest.fixture(autouse=True)
def _forget_held_entries():
    yield
    Unwritten._by_path.clear()
    Reachability._by_uri.clear()


def _sweep_run(tracking_uri: str, journal_dir: Path) -> SweepRun:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    run = client.create_run(experiment)
    return SweepRun(client, tracking_uri, experiment, run.info.run_id, "s", journal_dir)


def _folder(path: Path, size: int = 1000) -> Path:
    path.mkdir(parents=True)
    (path / "a.bin").write_bytes(b"x" * size)
    return path


def test_a_staging_copy_that_fails_leaves_no_folder(tmp_path: Path, tracking_uri: str) -> None:
    journals = tmp_path / "sweep" / DRIVER_JOURNALS
    sweep = _sweep_run(tracking_uri, journals)
    source = _folder(tmp_path / "plots")
    (source / "z.png").symlink_to(tmp_path / "missing.png")  # copied after a.bin, and failing (no such file)
    with pytest.raises(shutil.Error):
        sweep.staged(source, "plots")
    assert list((journals / STAGED).iterdir()) == []
    entry = sweep.staged(_folder(tmp_path / "tables"), "best_eval")  # a complete copy, under its final name
    assert [p.name for p in (journals / STAGED).iterdir()] == [Path(entry["dir"]).name]
    assert (Path(entry["dir"]) / "a.bin").stat().st_size == 1000


def _stage(folder: Path, name: str) -> Path:
    return _folder(folder / STAGED / name, 10)


def test_staged_folders_no_journal_names_are_removed_once_older_than_the_last_entry(tmp_path: Path) -> None:
    folder = tmp_path / DRIVER_JOURNALS
    named = _stage(folder, "best_model-1000")
    journal = Journal(folder / PARENT_JOURNAL)
    journal.append({"op": "artifacts", "dir": str(named), "path": "best_model", "remove": True, "time_ms": 2000})
    journal.append({"op": "tags", "tags": {"k": "v"}, "time_ms": 5000})
    Journal(folder / "worker-train_0.jsonl").append({"op": "tags", "tags": {}, "time_ms": 99_000})  # not the driver's
    held = _stage(folder, "best_eval-3500")  # its entry is in memory (the disk refused it): still named
    Unwritten._by_path[folder / "trial-t1.jsonl"] = [{"op": "artifacts", "dir": str(held), "remove": True}]
    for name in ("plots-3000", "plots-4000.part", "best_weights-9000", "best_weights-9500.part"):
        _stage(folder, name)
    removed = remove_orphan_staged(folder)
    assert sorted(removed) == ["plots-3000", "plots-4000.part"]
    left = sorted(p.name for p in (folder / STAGED).iterdir())
    # named, held, or staged after the last entry (its entry may be on its way)
    assert left == ["best_eval-3500", "best_model-1000", "best_weights-9000", "best_weights-9500.part"]


def test_a_resume_or_sync_removes_the_staged_folders_a_killed_finalize_left(tmp_path: Path, tracking_uri: str) -> None:
    sweep_dir = tmp_path / "sweep"
    folder = sweep_dir / DRIVER_JOURNALS
    sweep = _sweep_run(tracking_uri, folder)
    before = int(time.time() * 1000) - 60_000
    orphan = _stage(folder, f"best_model-{before}")  # copied, then the driver was killed before its entry
    cut = _stage(folder, f"plots-{before}.part")  # a copy cut short
    sweep.set_tags({"sentsweep.status": "finalizing"})  # the resumed driver's first entry
    assert replay_sweep_journals(str(sweep_dir), tracking_uri, "s", sweep.scope()).pending == 0
    assert not orphan.exists() and not cut.exists()
    state = json.loads((folder / (PARENT_JOURNAL + ".state")).read_text())
    assert state["delivered"] == 1


def test_a_move_is_one_rename_on_the_same_file_system(tmp_path: Path, tracking_uri: str) -> None:
    journals = tmp_path / "sweep" / DRIVER_JOURNALS
    source = _folder(tmp_path / "best_model")
    entry = _sweep_run(tracking_uri, journals).staged(source, "best_model", move=True)
    assert not source.exists() and (Path(entry["dir"]) / "a.bin").stat().st_size == 1000


def test_a_move_across_file_systems_that_fails_keeps_its_source_whole(tmp_path: Path, tracking_uri: str) -> None:
    """Across file systems a move is a copy; one that fails midway leaves the source as it was and no copy (a
    move that deleted the source as it went would leave both halves incomplete)."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("no second file system (/dev/shm) beside the temporary folder")
    journals = tmp_path / "sweep" / DRIVER_JOURNALS
    sweep = _sweep_run(tracking_uri, journals)
    source = shm / f"sentsweep-test-{time.time_ns()}"
    try:
        _folder(source)
        (source / "z.png").symlink_to(tmp_path / "missing.png")  # copied after a.bin, and failing
        with pytest.raises(shutil.Error):
            sweep.staged(source, "best_model", move=True)
        assert (source / "a.bin").stat().st_size == 1000 and list((journals / STAGED).iterdir()) == []
        (source / "z.png").unlink()
        entry = sweep.staged(source, "best_model", move=True)
        assert not source.exists() and (Path(entry["dir"]) / "a.bin").stat().st_size == 1000
    finally:
        shutil.rmtree(source, ignore_errors=True)
