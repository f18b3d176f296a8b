"""A trial that fails for a reason a retry cannot fix (here a NaN loss) is not retried even with
``max_failures: 1``: counted failed, Optuna told an infeasible trial (a constraint violation, with the reason),
its run FAILED after one attempt, one line printed;
a sweep in which no trial finished closes its parent FAILED (real Ray, Optuna, MLflow)."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient
from optuna.trial import TrialState

from sentsweep.platform.location import locate
from sentsweep.platform.search.study_store import load_study
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, PARENT_TAG, REASON_TAG, STATUS_TAG


def test_a_nan_loss_is_not_retried_and_fails_the_sweep(tmp_path, tiny_bert_dir, tracking_uri, ray_session,
                                                       capsys) -> None:
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        fixed={"nan_at_step": 2}, max_failures=1)
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)

    assert outcome.counts == {"finished": 0, "pruned": 0, "stopped": 0, "not started": 0, "failed": 2}
    client = MlflowClient(tracking_uri=tracking_uri)
    children = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'")
    assert len(children) == 2
    for run in children:
        assert run.info.status == "FAILED" and run.data.tags[ATTEMPT_TAG] == "1", "not retried"
        assert run.data.tags[REASON_TAG].startswith("NonFiniteLossError: ")
        assert "non-finite loss nan at step 2" in run.data.tags[REASON_TAG]
    study = load_study(locate(outcome.sweep_dir))
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert all(t.constraints == {"diverged": 1.0} for t in study.trials)  # TPE learns the region
    assert all("non-finite loss" in t.user_attrs["fail_reason"] for t in study.trials)
    assert not list(Path(outcome.sweep_dir).glob("*/error.txt")), "no Ray error (and traceback) recorded"
    lines = [line for line in capsys.readouterr().out.splitlines() if "failed (not retried)" in line]
    assert len(lines) == 2 and all("NonFiniteLossError" in line and "infeasible (diverged)" in line for line in lines)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.info.status == "FAILED" and parent.data.tags[STATUS_TAG] == "failed"
    assert parent.data.tags[REASON_TAG] == "no trial finished: 0 finished, 0 pruned, 2 failed"
