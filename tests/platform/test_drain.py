"""The driver's side of a drain: the stop marker in the experiment folder as a Tune trial sees it, when the drain
calls Tune's stop, and how a draining report is kept from the scheduler and the searcher."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs
import pytest

from sentsweep.platform.driver.interrupt import Drain
from sentsweep.platform.results import evaluation_result, is_draining
from sentsweep.trainables.report_keys import DRAINING_KEY, EVALUATIONS_KEY
from sentsweep.trainables.stop_flag import StopFlag


def test_evaluation_result_counts_evaluations_not_reports() -> None:
    plain = {"training_iteration": 3, "score": 1.0}
    assert evaluation_result(plain) is plain and not is_draining(plain)
    # one draining report before: Tune counts 3 reports, the trial its second evaluation
    assert evaluation_result({**plain, EVALUATIONS_KEY: 2.0})["training_iteration"] == 2
    assert is_draining({DRAINING_KEY: 1.0, "training_iteration": 3})


def _drain(folder: Path, grace_s: float, clock=None) -> Drain:
    folder.mkdir(parents=True, exist_ok=True)
    if clock is None:
        return Drain(pyarrow.fs.LocalFileSystem(), str(folder), grace_s=grace_s)
    return Drain(pyarrow.fs.LocalFileSystem(), str(folder), grace_s=grace_s, clock=clock)


def test_a_trial_sees_the_marker_the_driver_writes(ray_session, tmp_path: Path) -> None:
    """The trial finds the marker through its own Tune storage: the same file the driver wrote."""
    from ray import tune

    def trial(config: dict) -> None:
        flag = StopFlag.for_this_trial()
        tune.report({"raised": float(flag is not None and flag.is_raised()),
                     "path_matches": float(flag is not None and flag.path == config["path"])})

    drain = _drain(tmp_path / "results" / "sweep-a", grace_s=20.0)
    drain.flag.raise_flag()
    tuner = tune.Tuner(trial, param_space={"path": drain.flag.path},
                       run_config=tune.RunConfig(name="sweep-a", storage_path=str(tmp_path / "results"),
                                                 verbose=0))
    (result,) = tuner.fit()
    assert result.error is None, result.error
    assert result.metrics["path_matches"] == 1.0 and result.metrics["raised"] == 1.0
    drain.reset_flag()
    assert not drain.flag.is_raised()


def test_the_drain_writes_the_marker_and_stops_tune_once(tmp_path: Path) -> None:
    from ray.tune.experiment import Trial

    clock = [0.0]
    drain = _drain(tmp_path / "sweep-a", grace_s=20.0, clock=lambda: clock[0])
    other = StopFlag(pyarrow.fs.LocalFileSystem(), str(tmp_path / "sweep-b"))
    drain.reset_flag()
    running, done = Trial("__fake", trial_id="r1", stub=True), Trial("__fake", trial_id="d1", stub=True)
    running.set_status(Trial.RUNNING)
    drain.step([running, done])
    stopped: list[str] = []
    try:
        assert drain.begin(lambda: stopped.append("tune"))
        assert drain.flag.is_raised() and not other.is_raised()
        drain.step([running, done])
        assert not stopped  # the running trial has not drained yet
        drain.on_result("r1", {DRAINING_KEY: 1.0})
        drain.step([running, done])
        assert stopped == ["tune"]
        drain.step([running, done])
        assert stopped == ["tune"]
        assert not drain.begin(lambda: stopped.append("again"))  # a second signal: the caller stops Tune now
    finally:
        drain.reset_flag()
    assert not drain.flag.is_raised()


def test_a_stop_during_the_confirmation_stage_drains_through_its_own_folder(tmp_path: Path) -> None:
    """The stage is a second Tune experiment in ``<sweep>/confirmation``, whose trials read the marker there
    (``StopFlag.for_this_trial``: their experiment folder); the search's drain is in force again after it."""
    from ray.tune.experiment import Trial

    from sentsweep.platform.confirm.stage import stage_location
    from sentsweep.platform.driver.interrupt import StopSignals
    from sentsweep.platform.location import SweepLocation

    location = SweepLocation(str(tmp_path), "sweep-a", None, str(tmp_path / "sweep-a"))
    stage = stage_location(location)
    (tmp_path / "sweep-a" / "confirmation").mkdir(parents=True)
    local = pyarrow.fs.LocalFileSystem()
    stage_trial = StopFlag(local, str(tmp_path / "sweep-a" / "confirmation"))
    search_trial = StopFlag(local, str(tmp_path / "sweep-a"))
    stops = StopSignals()
    search = Drain(*location.resolve(), grace_s=20.0)
    with stops.draining(search):
        with stops.draining_in(*stage.resolve()) as drain:
            assert drain is not None and stops.drain is drain and drain.grace_s == 20.0
            running = Trial("__fake", trial_id="c1", stub=True)
            running.set_status(Trial.RUNNING)
            drain.step([running])
            assert drain.begin(lambda: None)
            assert stage_trial.is_raised() and not search_trial.is_raised()
        assert stops.drain is search and not stage_trial.is_raised()
    assert stops.drain is None
    with stops.draining_in(*stage.resolve()) as none:  # outside a sweep's drain: none
        assert none is None and stops.drain is None


def test_a_folder_that_cannot_be_written_stops_without_draining(tmp_path: Path) -> None:
    from ray.tune.experiment import Trial

    trial = Trial("__fake", trial_id="r3", stub=True)
    trial.set_status(Trial.RUNNING)
    drain = Drain(pyarrow.fs.LocalFileSystem(), str(tmp_path / "missing" / "sweep"), grace_s=20.0)
    drain.step([trial])
    assert not drain.begin(lambda: None) and not drain.flag.is_raised()


def test_an_overdue_drain_stops_and_no_grace_means_no_drain(tmp_path: Path) -> None:
    from ray.tune.experiment import Trial

    clock = [0.0]
    trial = Trial("__fake", trial_id="r2", stub=True)
    trial.set_status(Trial.RUNNING)
    stopped: list[str] = []
    drain = _drain(tmp_path / "sweep-c", grace_s=5.0, clock=lambda: clock[0])
    drain.step([trial])
    try:
        assert drain.begin(lambda: stopped.append("tune"))
        clock[0] = 4.9
        drain.step([trial])
        assert not stopped
        clock[0] = 5.0
        drain.step([trial])
        assert stopped == ["tune"]
    finally:
        drain.reset_flag()
    off = _drain(tmp_path / "sweep-d", grace_s=0.0)
    off.step([trial])
    assert not off.begin(lambda: stopped.append("x")) and not off.flag.is_raised()


@pytest.mark.parametrize("grace", [-1.0])
def test_a_negative_grace_period_is_refused(grace: float, tmp_path, tiny_bert_dir) -> None:
    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import parse_sweep_config
    from tests.platform.sweep_toy import toy_config

    raw = toy_config(tmp_path, tiny_bert_dir, "sqlite:///x.db").model_dump(mode="json")
    with pytest.raises(ConfigError, match="stop_grace_s"):
        parse_sweep_config({**raw, "stop_grace_s": grace}, "sweep.yaml")


def test_on_s3_the_marker_is_an_object_in_the_sweep_folder(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep folder on S3 (moto): the drain writes and removes the marker there, read at the object-store cadence."""
    from ray.tune.experiment import Trial

    from sentsweep.platform.location import locate
    from sentsweep.trainables.stop_flag import REMOTE_CHECK_EVERY_S, STOP_MARKER
    from tests.platform.conftest import BUCKET
    from tools.harness.s3_server import DUMMY_KEYS

    for key, value in DUMMY_KEYS.items():
        monkeypatch.setenv(key, value)
    location = locate(f"s3://{BUCKET}/ray_results/drained", s3_endpoint)
    trial = Trial("__fake", trial_id="r4", stub=True)
    trial.set_status(Trial.RUNNING)
    drain = Drain(*location.resolve(), grace_s=20.0)
    assert drain.flag.check_every_s == REMOTE_CHECK_EVERY_S
    drain.reset_flag()  # nothing there yet: nothing to do
    drain.step([trial])
    assert drain.begin(lambda: None)
    assert STOP_MARKER in location.list() and drain.flag.is_raised()
    drain.reset_flag()
    assert STOP_MARKER not in location.list() and not drain.flag.is_raised()


def test_tunes_own_stop_lines_are_dropped_and_its_other_warnings_kept(caplog) -> None:
    """After a stop the driver names ``sentsweep resume``; Tune's ``Tuner.restore(...)`` hint would not resume the
    sweep's own state, and its "Stop signal received" repeats the driver's stopping line: both are filtered out of
    Tune's logger, and only they."""
    import logging

    from sentsweep.platform.driver.interrupt import hide_tunes_stop_lines

    hide_tunes_stop_lines()
    hide_tunes_stop_lines()  # once only
    tune_log = logging.getLogger("ray.tune.tune")
    assert len(tune_log.filters) == 1
    with caplog.at_level(logging.WARNING, logger="ray.tune.tune"):
        tune_log.warning('Experiment has been interrupted.\nResume experiment with: Tuner.restore(path="x")')
        tune_log.warning("Stop signal received (e.g. via SIGINT/Ctrl+C), ending Ray Tune run. Press CTRL+C to skip.")
        tune_log.warning("Trial t1 errored after 2 iterations.")
    assert [r.getMessage() for r in caplog.records] == ["Trial t1 errored after 2 iterations."]


def test_a_state_upload_racing_the_searchers_save_is_one_warning_line(caplog) -> None:
    """Tune's upload of its state can list the searcher's temporary file just before the atomic rename removes it;
    Tune then logs the FileNotFoundError's traceback as an error. It is one warning line, and other errors stay."""
    import logging

    from sentsweep.platform.driver.interrupt import hide_tunes_stop_lines

    hide_tunes_stop_lines()
    state_log = logging.getLogger("ray.tune.execution.experiment_state")
    raced = FileNotFoundError(2, "Failed to open local file '/tmp/ray/session_x/artifacts/sweep/driver_artifacts/"
                                 ".81eb-tmp-searcher-state-2026'")
    with caplog.at_level(logging.WARNING, logger="ray.tune.execution.experiment_state"):
        for exc in (raced, PermissionError(13, "Permission denied: '/sweeps/x'")):
            try:
                raise exc
            except OSError:
                state_log.error("Saving experiment state to storage at '/sweeps/x' failed with exception: ",
                                exc_info=True)
    first, second = caplog.records
    assert (first.levelname, first.getMessage(), first.exc_info) == (
        "WARNING", "a save of Tune's state met a file renamed while it was copied; the next save copies it again", None)
    assert second.levelname == "ERROR" and second.exc_info is not None and "Traceback" in caplog.text
