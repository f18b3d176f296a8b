"""The driver sheds a finished trial's logger files once its storage holds them, and uploads them before a trial
restarts (``platform/driver/callbacks.py``): real Tune trials on a remote-type pyarrow file system (a sub-tree
file system: not ``LocalFileSystem``) and on a local folder."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.fs
import pytest

from sentsweep.platform.driver.callbacks import ShedUploadedTrialFiles, UploadLogsBeforeRestart
from tests.platform.flaky_storage import FlakyHandler

pytestmark = pytest.mark.usefixtures("ray_session")

LOGGER_FILES = {"result.json": b'{"step": 1}\n', "progress.csv": b"step\n1\n", "params.json": b"{}",
                "params.pkl": b"\x80\x04}."}


def staged_trial(tmp_path: Path, trial_id: str, *, filesystem: pyarrow.fs.FileSystem | None = None):
    """A Tune trial whose driver staging folder holds its logger files and an error file."""
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    bucket = tmp_path / "bucket"
    bucket.mkdir(exist_ok=True)
    filesystem = filesystem or pyarrow.fs.SubTreeFileSystem(str(bucket), pyarrow.fs.LocalFileSystem())
    local = isinstance(filesystem, pyarrow.fs.LocalFileSystem)
    storage = StorageContext(storage_path=str(bucket / "sweeps") if local else "sweeps",
                             experiment_dir_name=f"exp-{tmp_path.name}", storage_filesystem=filesystem)
    trial = Trial("__fake", stub=True, storage=storage, trial_id=trial_id)
    trial.init_local_path()
    for name, data in {**LOGGER_FILES, "error.txt": b"ValueError: x"}.items():
        (Path(trial.local_path) / name).write_bytes(data)
    return trial


def upload(trial, names: list[str], *, truncate: int = 0) -> None:
    fs, folder = trial.storage.storage_filesystem, trial.storage.trial_fs_path
    fs.create_dir(folder)
    for name in names:
        with fs.open_output_stream(f"{folder}/{name}") as out:
            out.write((Path(trial.local_path) / name).read_bytes()[:-truncate or None])


def shed_uploaded(trial) -> bool:
    return ShedUploadedTrialFiles().chore(trial)


def local_names(trial) -> set[str]:
    return {p.name for p in Path(trial.local_path).iterdir()}


def test_uploaded_logger_files_are_shed_and_the_error_file_kept(tmp_path) -> None:
    trial = staged_trial(tmp_path, "t1")
    upload(trial, list(LOGGER_FILES))
    assert shed_uploaded(trial) is True
    assert local_names(trial) == {"error.txt"}
    remote = trial.storage.storage_filesystem.get_file_info(pyarrow.fs.FileSelector(trial.storage.trial_fs_path))
    assert {info.base_name for info in remote} == set(LOGGER_FILES)  # the storage keeps its copies


def test_a_file_missing_or_shorter_in_the_storage_stays_until_a_later_check(tmp_path) -> None:
    trial = staged_trial(tmp_path, "t2")
    upload(trial, ["result.json"], truncate=1)  # an upload that predates the last line
    upload(trial, ["params.json"])
    assert shed_uploaded(trial) is False
    assert local_names(trial) == {"result.json", "progress.csv", "params.pkl", "error.txt"}
    upload(trial, ["result.json", "progress.csv", "params.pkl"])
    assert shed_uploaded(trial) is True and local_names(trial) == {"error.txt"}


def test_a_sweep_on_a_local_folder_is_left_alone(tmp_path) -> None:
    trial = staged_trial(tmp_path, "t3", filesystem=pyarrow.fs.LocalFileSystem())
    assert shed_uploaded(trial) is True
    assert local_names(trial) == {*LOGGER_FILES, "error.txt"}


def test_the_callback_sheds_finished_trials_only_and_keeps_errored_ones(tmp_path) -> None:
    from ray.tune.experiment import Trial

    finished, errored = staged_trial(tmp_path, "t4"), staged_trial(tmp_path, "t5")
    for trial in (finished, errored):
        upload(trial, list(LOGGER_FILES))
    finished.set_status(Trial.TERMINATED)
    errored.set_status(Trial.ERROR)
    callback = ShedUploadedTrialFiles(delay_s=0.0)
    callback.on_trial_complete(0, [finished, errored], finished)
    callback.on_trial_error(0, [finished, errored], errored)
    callback.on_step_end(1, [finished, errored])
    assert local_names(finished) == {"error.txt"}
    assert local_names(errored) == {*LOGGER_FILES, "error.txt"}
    assert callback.__getstate__()["_ended"] == {}  # nothing of the trials goes into tuner.pkl


class HeldSnapshotHandler(FlakyHandler):
    """A storage whose uploads of Tune's snapshots, once :meth:`hold` is called, stop after they listed the staging
    folder (at their first sub-folder) until :attr:`go` is set."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.under: str | None = None
        self.listed, self.go = threading.Event(), threading.Event()

    def hold(self, experiment_path: str) -> None:
        self.under = experiment_path.rstrip("/") + "/"

    def create_dir(self, path: str, recursive: bool) -> None:
        if self.under is not None and path.startswith(self.under):  # copy_files listed the folder and is copying
            self.listed.set()
            assert self.go.wait(30), "the test never let the snapshot go on"
        super().create_dir(path, recursive)


def snapshot_held_after_listing(tmp_path: Path, trial_id: str) -> tuple[Any, HeldSnapshotHandler]:
    """A finished trial whose storage holds its logger files, and Tune's snapshot of the staging folder running,
    held after it listed the trial's files and before it opened them."""
    handler = HeldSnapshotHandler(tmp_path / "bucket")
    trial = staged_trial(tmp_path, trial_id, filesystem=pyarrow.fs.PyFileSystem(handler))
    upload(trial, list(LOGGER_FILES))
    storage = trial.storage
    handler.hold(storage.experiment_fs_path)
    assert storage.syncer.sync_up(storage.experiment_driver_staging_path, storage.experiment_fs_path)
    assert handler.listed.wait(30), "Tune's snapshot never reached the trial's folder"
    return trial, handler


def test_the_files_go_once_tunes_running_snapshot_has_read_them(tmp_path) -> None:
    trial, handler = snapshot_held_after_listing(tmp_path, "t7")
    threading.Timer(0.5, handler.go.set).start()
    assert shed_uploaded(trial) is True
    trial.storage.syncer.wait()  # deleting a file the snapshot listed fails it (FileNotFoundError)
    assert local_names(trial) == {"error.txt"}


def test_a_snapshot_that_runs_on_leaves_the_files_to_a_later_try(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(ShedUploadedTrialFiles, "sync_wait_s", 0.2)
    trial, handler = snapshot_held_after_listing(tmp_path, "t8")
    try:
        assert shed_uploaded(trial) is False
        assert local_names(trial) == {*LOGGER_FILES, "error.txt"}
    finally:
        handler.go.set()
    trial.storage.syncer.wait()
    assert shed_uploaded(trial) is True and local_names(trial) == {"error.txt"}


def test_trials_that_end_together_wait_for_a_running_snapshot_once_a_step(tmp_path, monkeypatch) -> None:
    """A slow snapshot holds Tune's loop for ``sync_wait_s`` at most once a step, however many trials ended."""
    from ray.tune.experiment import Trial

    from sentsweep.platform.driver import callbacks

    asked: list[float] = []
    running = [True]
    monkeypatch.setattr(callbacks, "wait_for_tune_syncs", lambda timeout_s: asked.append(timeout_s) or not running[0])
    trials = [staged_trial(tmp_path, f"t9{i}") for i in range(3)]
    callback = ShedUploadedTrialFiles(delay_s=0.0)
    for trial in trials:
        upload(trial, list(LOGGER_FILES))
        trial.set_status(Trial.TERMINATED)
        callback.on_trial_complete(0, trials, trial)
    callback.on_step_end(1, trials)
    assert asked == [ShedUploadedTrialFiles.sync_wait_s], "each ended trial waited for the snapshot"
    assert all(local_names(t) == {*LOGGER_FILES, "error.txt"} for t in trials)
    running[0] = False
    callback._ended = {t.trial_id: (0.0, t) for t in trials}  # their retry is due
    callback.on_step_end(2, trials)
    assert len(asked) == 2 and all(local_names(t) == {"error.txt"} for t in trials)


@dataclass(eq=False)
class RestartingTrial:
    """What Tune's logger callbacks and :class:`UploadLogsBeforeRestart` read of a trial starting again from a
    checkpoint (the staged trial's folders; a checkpoint to restart from)."""

    local_path: str
    storage: Any
    checkpoint: object = "checkpoint_000001"
    config: dict[str, Any] = field(default_factory=dict)

    def init_local_path(self) -> None:
        Path(self.local_path).mkdir(parents=True, exist_ok=True)


def restarted_with_a_stale_upload(tmp_path: Path, trial_id: str, *, local: bool) -> RestartingTrial:
    """A trial whose storage ``result.json`` lacks the last staged line (a restart before Tune's next snapshot)."""
    staged = staged_trial(tmp_path, trial_id, filesystem=pyarrow.fs.LocalFileSystem() if local else None)
    (Path(staged.local_path) / "result.json").write_bytes(b'{"step": 2}\n{"step": 4}\n')
    upload(staged, ["result.json"], truncate=len(b'{"step": 4}\n'))
    return RestartingTrial(staged.local_path, staged.storage)

def staged_lines(trial) -> list[str]:
    return (Path(trial.local_path) / "result.json").read_text().splitlines()


@pytest.mark.parametrize("local", [True, False], ids=["local-folder", "remote"])
def test_a_restarted_trial_keeps_the_lines_reported_since_the_last_snapshot(tmp_path, local) -> None:
    from ray.tune.logger import JsonLoggerCallback

    unguarded = restarted_with_a_stale_upload(tmp_path, f"u{int(local)}", local=local)
    JsonLoggerCallback().on_trial_start(0, [unguarded], unguarded)
    assert staged_lines(unguarded) == ['{"step": 2}'], "Tune's logger copies the storage's file over the staged one"

    trial = restarted_with_a_stale_upload(tmp_path, f"g{int(local)}", local=local)
    UploadLogsBeforeRestart().on_trial_start(0, [trial], trial)
    JsonLoggerCallback().on_trial_start(0, [trial], trial)
    assert staged_lines(trial) == ['{"step": 2}', '{"step": 4}']


def test_a_fresh_trial_uploads_nothing(tmp_path) -> None:
    trial = staged_trial(tmp_path, "t6")
    UploadLogsBeforeRestart().on_trial_start(0, [trial], trial)
    remote = trial.storage.storage_filesystem.get_file_info(trial.storage.trial_fs_path)
    assert remote.type == pyarrow.fs.FileType.NotFound
