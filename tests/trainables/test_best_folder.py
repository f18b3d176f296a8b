"""A trial's best weights are never lost while they are replaced: the new ones are written whole into
``best.next/`` before ``best/`` is replaced from there, a replacement cut short is finished at the next restore, and
a score is reported only once its weights are kept (a real pyarrow file system whose copies fail on S3's terms,
:mod:`tests.platform.flaky_storage`; real training loops on local folders)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs
import pytest

from sentsweep.trainables.checkpoints import BEST_MARKER, BestFolder, StoredFolder
from sentsweep.trainables.loop import TrainingLoop
from tests.platform.flaky_storage import FlakyHandler
from tests.trainables.test_loop import RegressionTask, _config


def _storage(root: Path) -> tuple[pyarrow.fs.FileSystem, FlakyHandler]:
    handler = FlakyHandler(root)
    return pyarrow.fs.PyFileSystem(handler), handler


def _model(fs: pyarrow.fs.FileSystem, path: str, content: bytes) -> StoredFolder:
    """A saved model of two files (so a copy can fail half-way)."""
    fs.create_dir(path, recursive=True)
    for name in ("config.json", "model.safetensors"):
        with fs.open_output_stream(f"{path}/{name}") as out:
            out.write(content + name.encode())
    return StoredFolder(fs, path)


def _weights(folder: Path) -> bytes:
    return (folder / "model.safetensors").read_bytes()


@pytest.fixture
def kept(tmp_path: Path) -> tuple[BestFolder, FlakyHandler, StoredFolder]:
    """A best folder holding step 2's weights, and step 4's better weights in a checkpoint."""
    fs, handler = _storage(tmp_path)
    best = BestFolder(StoredFolder(fs, "trial/best"))
    best.keep(_model(fs, "trial/checkpoint_000000/model", b"step 2 "), 2, 80.0)
    return best, handler, _model(fs, "trial/checkpoint_000001/model", b"step 4 ")


def test_a_copy_failing_into_best_next_leaves_the_kept_weights(kept, tmp_path: Path) -> None:
    best, handler, newer = kept
    handler.fail("copy_file", "best.next/model.safetensors")
    with pytest.raises(OSError):
        best.keep(newer, 4, 81.0)
    assert best.marker()["step"] == 2
    assert _weights(best.fetch(tmp_path / "fetched")) == b"step 2 model.safetensors"
    assert _weights(tmp_path / "trial" / "best") == b"step 2 model.safetensors", "best/ itself is untouched"
    best.keep(newer, 4, 81.0)  # the storage answers again: the next improvement (or restore) goes through
    assert best.marker()["step"] == 4 and not (tmp_path / "trial" / "best.next").exists()
    assert _weights(tmp_path / "trial" / "best") == b"step 4 model.safetensors"


def test_a_replacement_cut_short_is_read_from_best_next_and_finished_by_settle(kept, tmp_path: Path) -> None:
    best, handler, newer = kept
    handler.fail("copy_file", "best/model.safetensors")  # best/ emptied, half refilled: then the node is lost
    with pytest.raises(OSError):
        best.keep(newer, 4, 81.0)
    assert not (tmp_path / "trial" / "best" / "model.safetensors").exists()
    folder, marker = best.intact()
    assert folder == best.spare and marker["step"] == 4
    assert _weights(best.fetch(tmp_path / "fetched")) == b"step 4 model.safetensors"
    best.settle()  # what the trial's next restore (and the sweep's retention) does first
    assert best.intact()[0] == best.folder and best.marker()["step"] == 4
    assert _weights(tmp_path / "trial" / "best") == b"step 4 model.safetensors"
    assert sorted(p.name for p in (tmp_path / "trial" / "best").iterdir()) == [
        BEST_MARKER, "config.json", "model.safetensors"]
    assert not (tmp_path / "trial" / "best.next").exists()


def test_an_incomplete_best_next_is_dropped_and_best_kept(kept, tmp_path: Path) -> None:
    best, handler, newer = kept
    handler.fail("open_output_stream", "best.next/best.json")  # every weight copied, the marker never written
    with pytest.raises(OSError):
        best.keep(newer, 4, 81.0)
    assert best.marker()["step"] == 2
    best.settle()
    assert not (tmp_path / "trial" / "best.next").exists() and best.marker()["step"] == 2


def test_removing_the_best_weights_removes_a_replacement_too(kept, tmp_path: Path) -> None:
    best, handler, newer = kept
    handler.fail("copy_file", "best/model.safetensors")
    with pytest.raises(OSError):
        best.keep(newer, 4, 81.0)
    removed = best.remove()
    assert removed > 0 and best.intact() is None
    assert not (tmp_path / "trial" / "best").exists() and not (tmp_path / "trial" / "best.next").exists()


def test_a_score_is_reported_only_once_its_weights_are_kept(tmp_path: Path) -> None:
    """An improvement at an evaluation without a checkpoint: Tune (and so Optuna and MLflow) hears the score only
    after the best folder holds its weights."""
    best = BestFolder(StoredFolder.local(tmp_path / "best"))
    kept_when_reported: list[tuple[int, int | None]] = []

    def report(metrics: dict, checkpoint: Path | None) -> None:
        kept_when_reported.append((int(metrics["step"]), (best.marker() or {}).get("step")))

    task = RegressionTask()
    task.dev_scores = [1.0, 3.0, 2.0, 2.0, 2.0, 2.0]  # better at steps 2 and 4, no checkpoint before step 12
    TrainingLoop(task, _config(checkpoint_every=6), report=report, best=best, work_dir=tmp_path / "w").run()
    assert kept_when_reported[:3] == [(2, 2), (4, 4), (6, 4)]


def test_a_restore_finishes_a_replacement_cut_short(tmp_path: Path) -> None:
    """A trial whose node was lost while ``best/`` was replaced: its next attempt, restored from its checkpoint,
    finds ``best/`` whole again, holding the newer weights."""
    import shutil

    trial = tmp_path / "trial"
    persisted: list[Path] = []

    def report(metrics: dict, checkpoint: Path | None) -> StoredFolder | None:
        if checkpoint is None:
            return None
        target = trial / f"checkpoint_{len(persisted):06d}"
        shutil.copytree(checkpoint, target)
        persisted.append(target)
        return StoredFolder.local(target)

    best = BestFolder(StoredFolder.local(trial / "best"))
    task = RegressionTask()
    task.dev_scores = [1.0, 3.0, 2.0, 2.0, 2.0, 2.0]
    TrainingLoop(task, _config(checkpoint_every=6), report=report, best=best, work_dir=tmp_path / "a").run()
    assert best.marker()["step"] == 4
    shutil.copytree(trial / "best", trial / "best.next")  # cut short: best.next/ whole, best/ emptied
    for path in (trial / "best").iterdir():
        path.unlink()
    resumed = RegressionTask()
    resumed.dev_scores = task.dev_scores
    TrainingLoop(resumed, _config(checkpoint_every=6), report=lambda m, c: None, best=best,
                 work_dir=tmp_path / "b").run(resume_from=[StoredFolder.local(persisted[-1])])
    assert best.intact()[0] == best.folder and best.marker()["step"] == 4
    assert not (trial / "best.next").exists()
