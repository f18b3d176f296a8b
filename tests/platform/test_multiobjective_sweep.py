"""A real multi-objective sweep (Ray Tune, Optuna, MLflow): two objectives reach the study, ASHA stops trials on the
first, and the Pareto front is tagged on the parent run, written as CSV and PNG and listed by ``compare``."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from mlflow import MlflowClient
from optuna.study import StudyDirection
from optuna.trial import TrialState

from sentsweep.platform.location import locate
from sentsweep.platform.report.compare import compare, render
from sentsweep.platform.search.study_store import load_study
from sentsweep.tracking.vocabulary import OBJECTIVES_TAG, PARENT_TAG, PARETO_TAG, TRIAL_ID_TAG, TRIAL_NUMBER_TAG

pytestmark = pytest.mark.slow  # a toy sweep of 5 trials (about a minute on 2 cores)


def test_two_objective_sweep_records_and_lists_its_pareto_front(tmp_path, tiny_bert_dir, mlflow_template,
                                                                  ray_session):
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    shutil.copy(mlflow_template, tmp_path / "mlruns.db")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    config = toy_config(tmp_path, tiny_bert_dir, uri, num_samples=5, max_concurrent_trials=1, export=False,
                        objectives=["stsb_dev max", "compute_seconds min"])
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lines.append)
    assert outcome.counts["finished"] >= 1 and sum(outcome.counts.values()) == 5

    study = load_study(locate(outcome.sweep_dir))
    assert study.directions == [StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE]
    complete = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(complete) == outcome.counts["finished"]
    assert all(len(t.values) == 2 and t.values[1] > 0 for t in complete)  # dev and the trial's seconds
    assert len(study.get_trials(states=(TrialState.PRUNED,))) == outcome.counts["pruned"]  # ASHA on stsb_dev

    client = MlflowClient(uri)
    parent = client.get_run(outcome.parent_run_id)
    front = parent.data.tags[PARETO_TAG].split(",")
    assert parent.data.tags[OBJECTIVES_TAG] == "stsb_dev max; compute_seconds min"
    feasible = [(t.values[0], t.values[1]) for t in complete]
    assert 1 <= len(front) <= len(feasible)
    assert outcome.best_trial_id in front  # the winner: the best first objective, always on the front
    folder = Path(client.download_artifacts(outcome.parent_run_id, "pareto", str(tmp_path / "pareto")))
    assert (folder / "pareto_front.png").stat().st_size > 10_000
    rows = list(csv.DictReader((folder / "pareto_front.csv").open()))
    assert len(rows) == outcome.counts["finished"]
    assert [r["trial_id"] for r in rows if r["on_front"] == "1"] == front
    told = sorted((float(r["stsb_dev"]), float(r["compute_seconds"])) for r in rows)
    assert [v for pair in told for v in pair] == pytest.approx([v for pair in sorted(feasible) for v in pair])
    assert any(line.startswith("Pareto front (stsb_dev max vs compute_seconds min)") for line in lines)

    sweeps, trials = compare(client, sweeps=[outcome.parent_run_id])
    listed = sweeps.attrs["pareto"]
    labels = {t.data.tags[TRIAL_ID_TAG]: f"t{int(t.data.tags[TRIAL_NUMBER_TAG]):02d}"
              for t in client.search_runs([parent.info.experiment_id], f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
              if TRIAL_NUMBER_TAG in t.data.tags}
    assert list(listed["trial"]) == [labels[t] for t in front]  # named as in the trials table
    assert {"stsb_dev", "compute_seconds", "lr", "scale"} <= set(listed.columns)
    assert "## Pareto front" in render(sweeps, trials)


def test_three_objectives_a_further_dev_set_and_a_confirmation_stage(tmp_path, tiny_bert_dir, tracking_uri,
                                                                     ray_session):
    """STS-B dev, SICK-R trial (scored at every evaluation, told at the selected report) and compute: the study gets
    all three; the confirmation stage re-runs the best by the first objective and picks the winner by its rule; the
    front stays the search's (single-seed) trials."""
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=3, scheduler={"type": "fifo"},
                        fixed={"max_steps": 4}, confirm={"top_k": 2, "seeds": 1}, plots=False, export=False,
                        objectives=["stsb_dev max", "sickr_trial max", "compute_seconds min"])
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)
    study = load_study(locate(outcome.sweep_dir))
    assert len(study.directions) == 3
    for trial, result in zip(study.get_trials(states=(TrialState.COMPLETE,)), outcome.results, strict=True):
        frame = result.metrics_dataframe
        reports = frame[frame["final"] != 1.0] if "final" in frame else frame
        at_best = reports.loc[reports["stsb_dev"].idxmax()]  # the first report at the best dev value
        assert trial.values[:2] == [at_best["stsb_dev"], at_best["sickr_trial"]]
    stage = outcome.confirmation
    assert stage is not None and len(stage.candidates) == 2 and outcome.best_trial_id == stage.chosen.trial_id
    searched = {c.runs[0].trial_id for c in stage.candidates}
    tags = MlflowClient(tracking_uri).get_run(outcome.parent_run_id).data.tags
    front = tags[PARETO_TAG].split(",")
    assert front and not set(front) - {str(r.metrics["trial_id"]) for r in outcome.results}
    best_first = max(outcome.results, key=lambda r: r.metrics["stsb_dev"]).metrics["trial_id"]
    assert best_first in front and best_first in searched
