"""A real sweep (Ray Tune + Optuna + ASHA + MLflow sqlite) of the toy method, read back from MLflow,
Optuna and the sweep folder: parent/child runs, params, metrics, artifacts, statuses and reasons."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlflow import MlflowClient
from optuna.trial import TrialState

from sentsweep.platform.location import CONFIG_COPY, MANIFEST, locate
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.study_store import load_study
from sentsweep.tracking.vocabulary import (
    EXPORTED_MODEL_TAG,
    OUTCOME_TAG,
    PARENT_TAG,
    REASON_TAG,
    ROLE_TAG,
    SWEEP_TAG,
    TRIAL_ID_TAG,
    TRIAL_NUMBER_TAG,
)


@pytest.fixture(scope="module")
def client(toy_sweep) -> MlflowClient:
    return MlflowClient(tracking_uri=toy_sweep.tracking_uri)


@pytest.fixture(scope="module")
def children(toy_sweep, client) -> list:
    return client.search_runs([toy_sweep.experiment_id], f"tags.`{PARENT_TAG}` = '{toy_sweep.parent_run_id}'")


def _by_fault(children, key: str):
    return [r for r in children if r.data.params.get(key, "None") != "None"]


def test_outcome_counts_each_kind_of_trial_end(toy_sweep):
    assert toy_sweep.counts == {"finished": 1, "pruned": 2, "stopped": 0, "not started": 0, "failed": 2}
    assert toy_sweep.best_value is not None and toy_sweep.best_run_id


def test_parent_run_holds_config_versions_and_totals(toy_sweep, client):
    parent = client.get_run(toy_sweep.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert parent.data.tags[ROLE_TAG] == "sweep"
    assert parent.data.tags[SWEEP_TAG] == toy_sweep.sweep_name
    params = parent.data.params
    assert params["num_samples"] == "5" and params["scheduler.type"] == "asha" and params["seed"] == "3"
    assert "version.ray" in params and "version.optuna" in params and "version.mlflow" in params
    metrics = parent.data.metrics
    assert (metrics["trials_finished"], metrics["trials_pruned"], metrics["trials_failed"]) == (1, 2, 2)
    assert metrics["trial_seconds"] > 0 and metrics["sweep_wall_seconds"] > 0
    assert metrics["best_stsb_dev"] == pytest.approx(toy_sweep.best_value)
    assert "final_stsb_test" in metrics
    artifacts = {f.path for f in client.list_artifacts(toy_sweep.parent_run_id)}
    assert {"sweep", "plots", "best_model", "best_eval"} <= artifacts
    plots = {Path(f.path).name for f in client.list_artifacts(toy_sweep.parent_run_id, "plots")}
    assert {"optimization_history.png", "parallel_coordinate.png", "learning_curves.png", "learning_curves.csv",
            "parallel_coordinate.csv"} <= plots
    # one finished feasible trial (the NaN one is infeasible): an importance would rest on nothing, and says so
    skipped = Path(client.download_artifacts(toy_sweep.parent_run_id, "plots/skipped.txt")).read_text()
    assert "param_importances.png" not in plots and "param_importances: ValueError: 1 finished feasible" in skipped
    sweep_files = {Path(f.path).name for f in client.list_artifacts(toy_sweep.parent_run_id, "sweep")}
    assert {"sweep.yaml", "search_space.py", "first_point.json"} <= sweep_files


def test_one_child_run_per_trial_with_status_and_reason(toy_sweep, children):
    assert len(children) == 5
    assert len({r.data.tags[TRIAL_ID_TAG] for r in children}) == 5
    assert all(r.data.tags[SWEEP_TAG] == toy_sweep.sweep_name for r in children)
    statuses = sorted((r.info.status, r.data.tags[OUTCOME_TAG]) for r in children)
    assert statuses == [("FAILED", "failed"), ("FAILED", "failed"), ("FINISHED", "finished"), ("FINISHED", "pruned"),
                        ("FINISHED", "pruned")]  # stopped early by ASHA: finished as the search meant
    numbers = sorted(int(r.data.tags[TRIAL_NUMBER_TAG]) for r in children)
    assert numbers == [1, 2, 3, 4, 5]
    assert all(r.info.run_name.startswith(f"t{int(r.data.tags[TRIAL_NUMBER_TAG]):02d}") for r in children)
    (raised,) = _by_fault(children, "fail_at_step")
    assert raised.info.status == "FAILED"
    assert "RuntimeError: toy failure at step 1" in raised.data.tags[REASON_TAG]
    (nan,) = _by_fault(children, "nan_at_step")
    assert nan.info.status == "FAILED"
    assert "non-finite loss nan at step 2" in nan.data.tags[REASON_TAG]
    pruned = [r for r in children if r.data.tags[OUTCOME_TAG] == "pruned"]
    assert all(r.data.params["dev_penalty"] == "30.0" for r in pruned)
    assert all(r.data.tags[REASON_TAG] == "pruned by ASHA at iteration 1 (step 2)" for r in pruned)
    assert all(r.data.metrics["system/wall_seconds"] > 0 for r in pruned)


def test_finished_trial_params_metrics_and_artifacts(toy_sweep, children, client):
    (done,) = [r for r in children if r.data.tags[OUTCOME_TAG] == "finished"]
    assert done.info.run_id == toy_sweep.best_run_id
    assert done.data.params["lr"] == "0.001" and done.data.params["scale"] == "1.0"  # the first point
    assert "tracking" not in done.data.params
    curve = client.get_metric_history(done.info.run_id, "train_loss")
    assert [m.step for m in curve] == [2, 4, 6]
    metrics = done.data.metrics
    assert metrics[f"system/{FINAL_KEY}"] == 1.0 and "stsb_test" in metrics and metrics["system/wall_seconds"] > 0
    assert FINAL_KEY not in metrics and "wall_seconds" not in metrics  # bookkeeping is on the System metrics tab
    # the weights are uploaded once, as the sweep's exported model; the trial's run points at it
    assert done.data.tags[EXPORTED_MODEL_TAG] == f"runs:/{toy_sweep.parent_run_id}/best_model"
    assert "best" not in {f.path for f in client.list_artifacts(done.info.run_id)}


def test_optuna_is_told_pruned_failed_and_infeasible_not_complete(toy_sweep):
    study = load_study(locate(toy_sweep.sweep_dir))
    states = sorted(t.state.name for t in study.trials)
    assert states == sorted(["COMPLETE", "COMPLETE", "FAIL", "PRUNED", "PRUNED"])  # the NaN trial: infeasible
    assert [t.number for t in study.trials if t.constraints] == [2]
    assert study.best_trial.number == 0
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert all(t.intermediate_values for t in pruned)
    assert study.trials[0].params == {"lr": 1e-3, "scale": 1.0}  # the paper defaults go first


def test_sweep_folder_can_be_resumed_from(toy_sweep):
    location = locate(toy_sweep.sweep_dir)
    assert {MANIFEST, CONFIG_COPY} <= set(location.list())
    manifest = location.read_manifest()
    assert manifest.parent_run_id == toy_sweep.parent_run_id
    assert manifest.sweep_config().num_samples == 5


def test_exported_best_model_matches_our_encoder(toy_sweep, client, tmp_path):
    from sentence_transformers import SentenceTransformer

    from sentsweep.methods.encoders import TransformerEncoder

    # after the sweep the best trial keeps its best weights in its folder (retention), the others none
    kept = sorted(Path(toy_sweep.sweep_dir).glob("*/best"))
    assert len(kept) == 1 and not list(Path(toy_sweep.sweep_dir).glob("*/checkpoint_*"))
    ours = TransformerEncoder.load(kept[0])
    exported = SentenceTransformer(toy_sweep.export_dir, device="cpu")
    sentences = ["a man is playing a guitar .", "the cat sat on the mat", "a dog"]
    np.testing.assert_allclose(exported.encode(sentences), ours.encode(sentences), atol=1e-5)


def test_best_model_is_registered(toy_sweep, client):
    version = client.get_model_version("toy-best", toy_sweep.model_version)
    assert version.run_id == toy_sweep.parent_run_id
    # registered from the logged copy, not uploaded again
    assert version.source == f"{client.get_run(toy_sweep.parent_run_id).info.artifact_uri}/best_model"


def test_a_sweep_without_a_finished_trial_closes_its_parent_failed(tmp_path, tiny_bert_dir, tracking_uri,
                                                                   ray_session, capsys) -> None:
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        fixed={"fail_at_step": 1})
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)
    assert outcome.counts == {"finished": 0, "pruned": 0, "stopped": 0, "not started": 0, "failed": 2}
    parent = MlflowClient(tracking_uri=tracking_uri).get_run(outcome.parent_run_id)
    assert parent.info.status == "FAILED"
    assert parent.data.tags[REASON_TAG] == "no trial finished: 0 finished, 0 pruned, 2 failed"
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("trial t0")]
    assert len(failed) == 2, "one line per failed trial"
    assert all("failed: RuntimeError: toy failure at step 1 (traceback in " in line and line.endswith("error.txt)")
               for line in failed)
