"""A resume keeps the sweep's stored config: a differing field is refused on one line naming it, and only the
fields a restored Ray Tune experiment can take pass with ``--allow-change``."""

from __future__ import annotations

import pyarrow.fs
import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.resume import config_changes, resume_config


def _config(**update: object) -> SweepConfig:
    raw = {"name": "demo", "method": "cosent", "num_samples": 8, "fixed": {"max_steps": 20}}
    raw.update(update)
    return SweepConfig.model_validate(raw)


def test_the_same_config_resumes_as_stored() -> None:
    stored = _config()
    assert resume_config(stored, None) is stored
    assert resume_config(stored, _config()) == stored


def test_a_changed_config_is_refused_with_every_differing_field() -> None:
    given = _config(num_samples=10, fixed={"max_steps": 30})
    assert config_changes(_config().model_dump(mode="json"), given.model_dump(mode="json")) == {
        "fixed.max_steps": (20, 30), "num_samples": (8, 10)}
    with pytest.raises(ConfigError) as err:
        resume_config(_config(), given, source="ray_results/demo-1")
    message = str(err.value)
    assert "fixed.max_steps (20 -> 30)" in message and "num_samples (8 -> 10)" in message
    assert "num_samples can change with --allow-change num_samples" in message and "\n" not in message
    assert message.startswith("ray_results/demo-1: ")


def test_only_the_time_budget_and_the_samples_may_change_when_allowed() -> None:
    given = _config(time_budget_s=600.0)
    with pytest.raises(ConfigError, match=r"time_budget_s \(None -> 600.0\).*--allow-change"):
        resume_config(_config(), given)
    assert resume_config(_config(), given, allow=["time_budget_s"]).time_budget_s == 600.0
    assert resume_config(_config(), _config(num_samples=10), allow=["num_samples"]).num_samples == 10
    with pytest.raises(ConfigError, match="cannot change on resume: max_concurrent_trials: Ray Tune restores") as err:
        resume_config(_config(), _config(max_concurrent_trials=2), allow=["max_concurrent_trials"])
    assert err.value.field == "--allow-change"
    with pytest.raises(ConfigError, match="fixed.max_steps"):  # allowing one field lets no other through
        resume_config(_config(), _config(time_budget_s=600.0, fixed={"max_steps": 30}), allow=["time_budget_s"])


def test_the_budget_the_stop_grace_and_the_notifications_may_change_when_allowed() -> None:
    stored = _config(budget={"gpu_hours": 1.0})
    given = _config(budget={"gpu_hours": 2.0, "wall_hours": 3.0}, stop_grace_s=60.0)
    with pytest.raises(ConfigError) as err:
        resume_config(stored, given)
    assert ("budget.gpu_hours (1.0 -> 2.0), budget.wall_hours (None -> 3.0), stop_grace_s (20.0 -> 60.0)"
            in str(err.value))
    assert "can change with --allow-change budget.gpu_hours,budget.wall_hours,stop_grace_s" in str(err.value)
    resumed = resume_config(stored, given, allow=["budget", "stop_grace_s"])  # a section stands for its fields
    assert (resumed.budget.gpu_hours, resumed.budget.wall_hours, resumed.stop_grace_s) == (2.0, 3.0, 60.0)
    assert resumed.num_samples == stored.num_samples
    assert resume_config(stored, _config(budget={"gpu_hours": 2.0}), allow=["budget.gpu_hours"]).budget.gpu_hours == 2.0
    with pytest.raises(ConfigError, match=r"budget.wall_hours \(None -> 3.0\)"):  # one field named: only that one
        resume_config(stored, given, allow=["budget.gpu_hours", "stop_grace_s"])
    notify = _config(notify={"webhook_env": "SWEEP_HOOK", "on": ["failure"]})
    assert resume_config(_config(), notify, allow=["notify"]).notify.on == ["failure"]
    with pytest.raises(ConfigError, match="cannot change on resume: budgets: only"):
        resume_config(stored, given, allow=["budgets"])


def test_a_lifted_budget_reopens_a_search_it_had_ended(tmp_path) -> None:
    """The restored search generator's "finished" flag (set when the spent budget's gate said so) is cleared only
    when the changed budget lifted the stop, or more samples were asked for."""
    from ray.tune.search.optuna import OptunaSearch

    from sentsweep.platform.driver.resume import ResizableSearchGenerator

    saved = {"counter": 2, "total_samples": 8, "finished": True, "experiment": None}
    for reopen, more, finished in ((False, 0, True), (True, 0, False), (False, 2, False)):
        generator = ResizableSearchGenerator(OptunaSearch(), 8 + more, reopen, (pyarrow.fs.LocalFileSystem(),
                                                                              str(tmp_path)))
        generator.set_state(dict(saved))
        assert generator.is_finished() is finished


def test_a_failed_restore_leaves_the_parent_as_it_was(tmp_path, tiny_bert_dir, tracking_uri, ray_session) -> None:
    """``Tuner.restore`` of a damaged folder fails before the parent run is touched (it stays interrupted)."""
    from mlflow import MlflowClient

    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import SweepManifest, new_sweep_location
    from sentsweep.platform.tracking.parent_run import SweepRun
    from sentsweep.tracking.vocabulary import STATUS_TAG
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri).resolved()
    location = new_sweep_location(config, suffix="dead")
    sweep = SweepRun.open(config, location.name, location.uri, TOY_SPACE.define_by_run, TOY_SPACE.first_point)
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id=sweep.run_id, experiment_id=sweep.experiment_id,
                                          tracking_uri=sweep.tracking_uri, created=0.0), config)
    location.write_text("tuner.pkl", "not a pickle")
    sweep.close("interrupted", "stopped")
    assert sweep.flush(30.0), "the session's writes reached MLflow, as at the end of a driver's session"
    with pytest.raises(Exception):  # noqa: B017, PT011 - whatever Ray raises for a damaged state file
        resume_sweep(location.uri, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                     echo=lambda line: None)
    parent = MlflowClient(tracking_uri=tracking_uri).get_run(sweep.run_id)
    assert parent.info.status == "KILLED" and parent.data.tags[STATUS_TAG] == "interrupted"


def test_an_override_carrying_a_login_names_the_sweep_folder_and_the_field(tmp_path) -> None:
    """``resume DIR --set model=https://user:PASSWORD@...``: one line naming the folder and the field, never the
    password, before anything is contacted."""
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import SweepManifest, locate

    config = _config(storage_path=str(tmp_path)).resolved(tmp_path, environ={})
    location = locate(str(tmp_path / "demo-20260101-000000"))
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id="0" * 32, experiment_id="1",
                                          tracking_uri=config.tracking.uri, created=0.0), config)
    with pytest.raises(ConfigError) as err:
        resume_sweep(location.uri, overrides=["model=https://bob:s3cr3t-Value@hub.example/bert"],
                     echo=lambda line: None)
    assert (err.value.field, err.value.file) == ("model", location.uri)
    assert "s3cr3t" not in str(err.value) and "user-info" in str(err.value)
