"""A trial whose snapshotted checkpoint Tune already deleted restores from the newest one left, or afresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from ray.train._internal.checkpoint_manager import _TrainingResult
from ray.train._internal.session import get_session
from ray.train._internal.storage import StorageContext
from ray.tune import Checkpoint

from sentsweep.platform.driver.trainable import newest_checkpoint, with_checkpoint_fallback
from sentsweep.trainables.checkpoints import StoredFolder
from sentsweep.trainables.restore_note import take_tune_fallback


def train_toy(config: dict) -> None:
    """Never run: the tests call ``restore`` only."""


def _trial(tmp_path: Path, folders: tuple[str, ...]):
    storage = StorageContext(storage_path=str(tmp_path), experiment_dir_name="sweep", trial_dir_name="trial")
    trial_dir = Path(storage.trial_fs_path)
    for name in folders:
        (trial_dir / name).mkdir(parents=True)
        (trial_dir / name / "checkpoint.json").write_text("{}")
    trial_dir.mkdir(parents=True, exist_ok=True)
    return with_checkpoint_fallback(train_toy)(config={}, storage=storage), trial_dir


def _loaded() -> Path | None:
    """The checkpoint the trial function will see as ``tune.get_checkpoint()``."""
    checkpoint = get_session().loaded_checkpoint
    return Path(checkpoint.path) if checkpoint is not None else None


def _snapshotted(trial_dir: Path, name: str) -> _TrainingResult:
    return _TrainingResult(checkpoint=Checkpoint(str(trial_dir / name)), metrics={"training_iteration": 1})


def test_the_trainable_keeps_the_function_name() -> None:
    assert with_checkpoint_fallback(train_toy)._name == "train_toy"


def test_newest_checkpoint_by_tune_numbering(tmp_path: Path) -> None:
    for name in ("checkpoint_000009", "checkpoint_000010", "work", "best"):
        (tmp_path / name).mkdir()
    assert newest_checkpoint(StoredFolder.local(tmp_path)).name == "checkpoint_000010"
    assert newest_checkpoint(StoredFolder.local(tmp_path / "work")) is None


def test_a_deleted_checkpoint_is_replaced_by_the_newest_left(ray_session: None, tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    trainable, trial_dir = _trial(tmp_path, ("checkpoint_000001", "checkpoint_000002"))
    try:
        trainable.restore(_snapshotted(trial_dir, "checkpoint_000000"))
        assert _loaded() == trial_dir / "checkpoint_000002" and trainable._restored
        assert "checkpoint_000000 is gone" in caplog.text
        assert take_tune_fallback(str(trial_dir)) == ("checkpoint_000000 is gone (deleted after Tune's last "
                                                      "snapshot); checkpoint_000002 is the newest")
    finally:
        trainable.stop()


def test_an_existing_checkpoint_is_restored_as_named(ray_session: None, tmp_path: Path) -> None:
    trainable, trial_dir = _trial(tmp_path, ("checkpoint_000001", "checkpoint_000002"))
    try:
        trainable.restore(_snapshotted(trial_dir, "checkpoint_000001"))
        assert _loaded() == trial_dir / "checkpoint_000001" and take_tune_fallback(str(trial_dir)) is None
    finally:
        trainable.stop()


def test_without_any_checkpoint_left_the_trial_starts_afresh(ray_session: None, tmp_path: Path) -> None:
    trainable, trial_dir = _trial(tmp_path, ())
    try:
        trainable.restore(_snapshotted(trial_dir, "checkpoint_000000"))
        assert _loaded() is None and not trainable._restored
        assert take_tune_fallback(str(trial_dir)) == "checkpoint_000000 is gone (deleted after Tune's last snapshot)"
    finally:
        trainable.stop()
