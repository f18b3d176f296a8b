"""The stop marker as a trial reads it: how often the folder is read, what a storage that fails reads as, and the
wait after the draining report (pure logic: an injected clock and sleep, a local folder)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs
import pytest

from sentsweep.trainables.stop_flag import CHECK_EVERY_S, REMOTE_CHECK_EVERY_S, STOP_MARKER, StopFlag


def _flag(folder: Path, clock: list[float]) -> StopFlag:
    folder.mkdir(parents=True, exist_ok=True)
    return StopFlag(pyarrow.fs.LocalFileSystem(), str(folder), clock=lambda: clock[0])


def test_the_marker_is_a_file_in_the_folder_and_read_at_most_every_few_seconds(tmp_path: Path) -> None:
    clock = [100.0]
    flag = _flag(tmp_path / "sweep", clock)
    assert flag.check_every_s == CHECK_EVERY_S
    assert not flag.requested()  # read now: no marker
    flag.raise_flag()
    assert (tmp_path / "sweep" / STOP_MARKER).is_file()
    clock[0] += CHECK_EVERY_S - 0.1
    assert not flag.requested()  # not read again yet
    clock[0] += 0.1
    assert flag.requested()
    flag.lower_flag()
    flag.lower_flag()  # none there: nothing to do
    assert not flag.is_raised()


def test_an_object_store_is_read_less_often() -> None:
    s3 = pyarrow.fs.S3FileSystem(endpoint_override="http://127.0.0.1:9", access_key="a", secret_key="b",
                                 region="us-east-1")
    assert StopFlag(s3, "bucket/sweep").check_every_s == REMOTE_CHECK_EVERY_S


class BrokenFileSystem:
    type_name = "local"

    def get_file_info(self, path: str):
        raise OSError("the disk is gone")


def test_a_storage_that_fails_reads_as_no_stop() -> None:
    assert not StopFlag(BrokenFileSystem(), "/sweep").is_raised()


def test_the_wait_ends_once_the_marker_is_gone(tmp_path: Path) -> None:
    clock = [0.0]
    flag = _flag(tmp_path / "sweep", clock)
    flag.raise_flag()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            flag.lower_flag()  # the driver's session ended

    with pytest.raises(SystemExit) as ended:
        flag.wait(sleep=sleep)
    assert ended.value.code == 0 and slept == [CHECK_EVERY_S] * 3


class FlakyFileSystem:
    """A local folder whose reads fail while ``failing`` is set (a storage outage)."""

    type_name = "local"

    def __init__(self) -> None:
        self.local = pyarrow.fs.LocalFileSystem()
        self.failing = False

    def get_file_info(self, path: str):
        if self.failing:
            raise OSError("the storage does not answer")
        return self.local.get_file_info(path)

    def open_output_stream(self, path: str):
        return self.local.open_output_stream(path)

    def delete_file(self, path: str) -> None:
        self.local.delete_file(path)


def test_a_storage_outage_during_the_wait_keeps_the_trial_waiting(tmp_path: Path) -> None:
    """Ending the wait is the trial's normal end (Tune would count it finished and never resume it): a marker that
    cannot be read is not a marker gone."""
    (tmp_path / "sweep").mkdir()
    storage = FlakyFileSystem()
    flag = StopFlag(storage, str(tmp_path / "sweep"))
    flag.raise_flag()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        storage.failing = len(slept) < 3  # an outage over the first two reads
        if len(slept) == 4:
            flag.lower_flag()  # the driver's session ended

    storage.failing = True
    with pytest.raises(SystemExit) as ended:
        flag.wait(sleep=sleep)
    assert ended.value.code == 0 and len(slept) == 4


def test_outside_a_trial_there_is_no_marker() -> None:
    pytest.importorskip("ray")
    assert StopFlag.for_this_trial() is None
