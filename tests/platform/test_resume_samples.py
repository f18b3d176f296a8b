"""``--allow-change num_samples``: a stopped sweep resumed with more samples runs that many trials in total (real
Ray Tune, the toy method); fewer than the trials it already started is refused before Ray starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.errors import ConfigError
from sentsweep.tracking.vocabulary import RESUME_CHANGES_TAG, ROLE_TAG, TRIAL_ID_TAG


def _trial_runs(client: MlflowClient) -> list:
    experiment = client.get_experiment_by_name("toy")
    return client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'") if experiment else []


@pytest.mark.slow  # about 3 Tune starts: over the fast suite's 40 s on 2 cores
def test_a_resume_with_more_samples_runs_that_many_trials(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import locate
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, interrupted_sweep, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 4, "sleep_s": 0.5})
    client = MlflowClient(tracking_uri=tracking_uri)
    sweep_dir = interrupted_sweep(config, 3)
    started = len(_trial_runs(client))
    assert 3 <= started <= 4
    assert sum(r.data.tags.get("sentsweep.outcome") == "finished" for r in _trial_runs(client)) < 4

    # fewer than the trials already started (two of them ended): refused, naming them, before Ray is touched
    with pytest.raises(ConfigError, match=f"cannot lower num_samples to 1: the sweep already started {started} "):
        resume_sweep(str(sweep_dir), overrides=["num_samples=1"], allow_change=["num_samples"],
                     trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=lambda line: None)
    with pytest.raises(ConfigError, match=r"num_samples \(4 -> 5\).*--allow-change num_samples"):
        resume_sweep(str(sweep_dir), overrides=["num_samples=5"], trainable=TOY_TRAINABLE, space=TOY_SPACE,
                     preflight=False, echo=lambda line: None)

    outcome = resume_sweep(str(sweep_dir), overrides=["num_samples=5"], allow_change=["num_samples"],
                           trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                           echo=lambda line: None)

    assert outcome.counts == {"finished": 5, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    runs = _trial_runs(client)
    assert len(runs) == 5 == len({r.data.tags[TRIAL_ID_TAG] for r in runs})
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 5
    manifest = locate(str(sweep_dir)).read_manifest()
    assert manifest.config["num_samples"] == 5  # the next resume compares with the changed config
    assert "num_samples: 5" in Path(sweep_dir, "sweep.yaml").read_text()
    parent = client.get_run(outcome.parent_run_id)
    assert json.loads(parent.data.tags[RESUME_CHANGES_TAG]) == {"num_samples": [4, 5]}
    assert parent.data.metrics["trials_finished"] == 5
