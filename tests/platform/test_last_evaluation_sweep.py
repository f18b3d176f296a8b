"""A real toy sweep (Ray Tune, Optuna, ASHA, MLflow sqlite) whose second trial is the worst at the rung of its one
and last evaluation: it trained every step, so it ends finished everywhere (the outcome, its MLflow run, the Optuna
study, compare), never pruned."""

from __future__ import annotations

from typing import Any

import optuna
import pytest
from mlflow import MlflowClient
from optuna.trial import TrialState

from sentsweep.platform.location import locate
from sentsweep.platform.report.compare import compare
from sentsweep.platform.search.study_store import load_study
from sentsweep.search_spaces import PythonSpace
from sentsweep.tracking.vocabulary import OUTCOME_TAG, PARENT_TAG
from tests.platform.sweep_toy import TOY_TRAINABLE, toy_config, toy_space


def penalised_space(trial: optuna.Trial) -> dict[str, Any] | None:
    """The toy's space; trial 1 scores 30 points below trial 0, so ASHA (grace 1, reduction 2) would stop it."""
    toy_space(trial)
    return {"dev_penalty": 30.0} if trial.number == 1 else None


PENALISED_SPACE = PythonSpace("toy-penalised", "toy", penalised_space, {"lr": 1e-3, "scale": 1.0})


@pytest.mark.slow
def test_a_trial_worst_at_its_last_evaluation_is_finished_everywhere(tmp_path, tiny_bert_dir, tracking_uri,
                                                                     ray_session):
    from sentsweep.platform.driver.sweep import run_sweep

    # one evaluation per trial, at its last step: the first rung of ASHA
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        search_space="toy-penalised", fixed={"max_steps": 2, "eval_every": 2}, plots=False)
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=PENALISED_SPACE, finalize=False, preflight=False,
                        echo=lambda line: None)
    assert outcome.counts == {"finished": 2, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    study = load_study(locate(outcome.sweep_dir))
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert study.trials[1].value < study.trials[0].value - 20.0  # the penalised one, told its value
    client = MlflowClient(tracking_uri=tracking_uri)
    runs = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'")
    assert sorted(r.data.tags.get(OUTCOME_TAG) for r in runs) == ["finished", "finished"]
    sweeps, trials = compare(client, sweeps=[outcome.parent_run_id])
    assert (sweeps.iloc[0]["finished"], sweeps.iloc[0]["pruned"]) == (2, 0)
    assert list(trials["status"]) == ["finished", "finished"]
