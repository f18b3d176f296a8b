"""A resume keeps the sweep's stored config: a differing field is refused on one line naming it, and only the
fields a restored Ray Tune experiment can take pass with ``--allow-change``."""

from __future__ import annotations

import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.resume_config import config_changes, resume_config


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


def test_a_failed_restore_leaves_the_parent_as_it_was(tmp_path, tiny_bert_dir, tracking_uri, ray_session) -> None:
    """``Tuner.restore`` of a damaged folder fails before the parent run is touched (it stays interrupted)."""
    from mlflow import MlflowClient

    from sentsweep.platform.storage import SweepManifest, new_sweep_location
    from sentsweep.platform.sweep import resume_sweep
    from sentsweep.platform.sweep_state import STATUS_TAG
    from sentsweep.platform.sweep_tracking import SweepRun
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri).resolved()
    location = new_sweep_location(config, suffix="dead")
    sweep = SweepRun.open(config, location.name, location.uri, TOY_SPACE.define_by_run, TOY_SPACE.first_point)
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id=sweep.run_id, experiment_id=sweep.experiment_id,
                                          tracking_uri=sweep.tracking_uri, created=0.0), config)
    location.write_text("tuner.pkl", "not a pickle")
    sweep.close("interrupted", "stopped")
    with pytest.raises(Exception):  # noqa: B017, PT011 - whatever Ray raises for a damaged state file
        resume_sweep(location.uri, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                     echo=lambda line: None)
    parent = MlflowClient(tracking_uri=tracking_uri).get_run(sweep.run_id)
    assert parent.info.status == "KILLED" and parent.data.tags[STATUS_TAG] == "interrupted"
