"""A sweep folder whose saved Tune state names sentsweep code that has since moved: one line, not a traceback."""

from __future__ import annotations

import pickle

import pytest

from sentsweep.platform.driver.sweep import other_version_error


def _unpickle_error(payload: bytes) -> BaseException:
    with pytest.raises((ImportError, AttributeError)) as caught:
        pickle.loads(payload)
    return caught.value


def test_state_naming_a_moved_sentsweep_module_is_one_line_naming_the_folder() -> None:
    # what Tuner.restore meets in a tuner.pkl written when the stop watch lived in driver/stopping.py
    moved = _unpickle_error(b"csentsweep.platform.driver.stopping\nStopWatch\n.")  # a pickled class reference
    error = other_version_error(moved, "/data/sweeps/s1")
    assert error is not None and error.file == "/data/sweeps/s1"
    assert str(error).startswith("/data/sweeps/s1: the sweep's saved Tune state was written by another version")
    assert "sentsweep.platform.driver.stopping" in str(error) and "\n" not in str(error)


def test_other_import_errors_are_left_as_they_are() -> None:
    assert other_version_error(ModuleNotFoundError("No module named 'pyarrow'"), "/s") is None
