"""The best folder is never without complete best weights: a new version is written beside the old one and switched
to by its marker; a failed copy (an S3 blip, a worker lost mid-copy) leaves the previous best weights readable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.fs
import pytest

from sentsweep.trainables.checkpoints import BEST_MARKER, BestFolder, StoredFolder, pick_best
from sentsweep.trainables.loop import TrainingLoop
from tests.trainables.test_loop import RegressionTask, _config


class FlakyStorage(pyarrow.fs.FileSystemHandler):
    """A pyarrow file system over a local folder whose chosen calls raise ``OSError`` (a storage blip), as a
    remote storage's would: not a :class:`pyarrow.fs.LocalFileSystem`, so the best folder copies with
    ``copy_file`` (S3's server-side copy)."""

    def __init__(self) -> None:
        self.base = pyarrow.fs.LocalFileSystem()
        self.failing: dict[str, int] = {}  # call name -> how many more calls succeed before the failures

    def fail(self, call: str, after: int = 0) -> None:
        self.failing[call] = after

    def heal(self) -> None:
        self.failing.clear()

    def _check(self, call: str) -> None:
        if call not in self.failing:
            return
        if self.failing[call] > 0:
            self.failing[call] -= 1
            return
        raise OSError(f"storage blip in {call}")

    def get_type_name(self) -> str:
        return "flaky"

    def equals(self, other: Any) -> bool:
        return other is self

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pyarrow.fs.FileInfo]:
        return self.base.get_file_info(paths)

    def get_file_info_selector(self, selector: pyarrow.fs.FileSelector) -> list[pyarrow.fs.FileInfo]:
        return self.base.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.base.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._check("delete_dir")
        self.base.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._check("delete_dir_contents")
        self.base.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("not here")

    def delete_file(self, path: str) -> None:
        self._check("delete_file")
        self.base.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.base.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self._check("copy_file")
        self.base.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.base.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.base.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        self._check("open_output_stream")
        return self.base.open_output_stream(path)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.base.open_append_stream(path)


def _weights(folder: Path, tag: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "a.safetensors").write_text(f"{tag}-a")
    (folder / "config.json").write_text(f'{{"tag": "{tag}"}}')
    return folder


def test_a_keep_that_fails_midway_leaves_the_previous_best_weights(tmp_path: Path) -> None:
    handler = FlakyStorage()
    storage = pyarrow.fs.PyFileSystem(handler)
    old = StoredFolder(storage, str(_weights(tmp_path / "trial" / "checkpoint_1" / "model", "old")))
    new = StoredFolder(storage, str(_weights(tmp_path / "trial" / "checkpoint_2" / "model", "new")))
    best = BestFolder(StoredFolder(storage, str(tmp_path / "trial" / "best")))
    best.keep(old, 4, 1.0)
    handler.fail("copy_file", after=1)  # the second file of the new weights does not reach the storage
    with pytest.raises(OSError, match="storage blip"):
        best.keep(new, 6, 2.0)
    assert best.marker()["step"] == 4, "the previous best weights are gone before their replacement is complete"
    assert (best.fetch(tmp_path / "fetched") / "a.safetensors").read_text() == "old-a"
    assert pick_best(None, best, "max").step == 4
    handler.heal()  # the storage answers again: the next keep replaces them and clears what the failed one left
    best.keep(new, 6, 2.0)
    assert best.marker()["step"] == 6
    assert (best.fetch(tmp_path / "fetched-again") / "a.safetensors").read_text() == "new-a"
    assert sorted(p.name for p in (tmp_path / "trial" / "best").iterdir()) == [BEST_MARKER, best.marker()["version"]]


def test_a_marker_that_cannot_be_written_leaves_the_previous_best_weights(tmp_path: Path) -> None:
    handler = FlakyStorage()
    storage = pyarrow.fs.PyFileSystem(handler)
    best = BestFolder(StoredFolder(storage, str(tmp_path / "best")))
    best.keep(StoredFolder(storage, str(_weights(tmp_path / "old", "old"))), 4, 1.0)
    handler.fail("open_output_stream")
    with pytest.raises(OSError):
        best.keep(StoredFolder(storage, str(_weights(tmp_path / "new", "new"))), 6, 2.0)
    assert best.marker()["step"] == 4
    assert (Path(best.weights().path) / "a.safetensors").read_text() == "old-a"


def test_old_versions_that_cannot_be_removed_now_are_removed_by_the_next_keep(tmp_path: Path) -> None:
    handler = FlakyStorage()
    storage = pyarrow.fs.PyFileSystem(handler)
    best = BestFolder(StoredFolder(storage, str(tmp_path / "best")))
    best.keep(StoredFolder(storage, str(_weights(tmp_path / "w1", "1"))), 2, 1.0)
    handler.fail("delete_dir")
    best.keep(StoredFolder(storage, str(_weights(tmp_path / "w2", "2"))), 4, 2.0)  # a warning, not an error
    assert best.marker()["step"] == 4 and len(list((tmp_path / "best").iterdir())) == 3
    handler.heal()
    best.keep(StoredFolder(storage, str(_weights(tmp_path / "w3", "3"))), 6, 3.0)
    assert sorted(p.name for p in (tmp_path / "best").iterdir()) == [BEST_MARKER, best.marker()["version"]]


def test_a_best_folder_of_the_first_layout_is_read_then_replaced(tmp_path: Path) -> None:
    folder = _weights(tmp_path / "trial" / "best", "old")
    files = {p.name: p.stat().st_size for p in folder.iterdir()}
    (folder / BEST_MARKER).write_text(json.dumps({"step": 4, "value": 1.0, "files": files}))
    best = BestFolder(StoredFolder.local(folder))
    assert best.marker()["step"] == 4 and Path(best.weights().path) == folder
    assert pick_best(None, best, "max").folder == StoredFolder.local(folder)
    assert (best.fetch(tmp_path / "fetched") / "a.safetensors").read_text() == "old-a"
    best.keep(StoredFolder.local(_weights(tmp_path / "new", "new")), 6, 2.0)
    version = best.marker()["version"]
    assert sorted(p.name for p in folder.iterdir()) == [BEST_MARKER, version]
    assert (folder / version / "a.safetensors").read_text() == "new-a"


def test_an_improvement_without_a_checkpoint_is_kept_before_it_is_reported(tmp_path: Path) -> None:
    """Tune, Optuna and MLflow get a better value only once its weights are in the best folder."""
    best = BestFolder(StoredFolder.local(tmp_path / "best"))
    task = RegressionTask()
    task.dev_scores = [1.0, 3.0, 2.0, 4.0, 2.0, 2.0]  # improvements at steps 2, 4 and 8, none checkpointed
    kept_at_report: list[tuple[int, int | None]] = []

    def report(metrics: dict, checkpoint: Path | None) -> None:
        kept_at_report.append((int(metrics["step"]), (best.marker() or {}).get("step")))

    TrainingLoop(task, _config(checkpoint_every=6), report=report, best=best, work_dir=tmp_path / "w").run()
    assert kept_at_report[:4] == [(2, 2), (4, 4), (6, 4), (8, 8)]
