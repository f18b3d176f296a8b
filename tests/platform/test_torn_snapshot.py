"""A resume whose newest Tune experiment state does not parse (a kill or a full disk cut its upload short) is one
line naming the file, the folder and the sweep's run left as they were: Tune itself would log the error and start
the whole experiment again, every trial from its first step and the budget's count from zero (real Ray, Optuna,
MLflow, the toy method)."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from sentsweep.errors import ConfigError


def test_a_resume_from_a_cut_short_experiment_state_is_refused_by_name(tmp_path, tiny_bert_dir, tracking_uri,
                                                                       ray_session) -> None:
    from sentsweep.platform.driver.sweep import resume_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, interrupted_sweep, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 4, "sleep_s": 0.5}, plots=False,
                        export=False)
    folder = interrupted_sweep(config, 1, deadline_s=600)
    (state,) = folder.glob("experiment_state-*.json")
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])
    before = sorted(p.name for p in folder.iterdir())
    client = MlflowClient(tracking_uri=tracking_uri)
    (parent,) = client.search_runs([e.experiment_id for e in client.search_experiments()],
                                   "tags.`sentsweep.role` = 'sweep'")

    with pytest.raises(ConfigError, match=f"{state.name}.*cannot be resumed"):
        resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=lambda line: None)
    assert sorted(p.name for p in folder.iterdir()) == before
    assert client.get_run(parent.info.run_id).info.status == parent.info.status
