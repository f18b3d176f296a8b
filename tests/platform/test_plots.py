"""The sweep's plots: learning curves over training steps with ASHA's stops marked, parallel coordinates that keep
pruned trials (at their last value) and trials without a value, parameter importance with its trial count; each
PNG with its data as CSV."""

from __future__ import annotations

import csv
import math

import optuna
import pytest

from sentsweep.platform.driver.failures import FAILED_KEY
from sentsweep.platform.report.plots import TrialRecord, sweep_plots, trial_status
from sentsweep.platform.results import FINAL_KEY
from sentsweep.trainables.infeasible import INFEASIBLE_KEY


def _records() -> list[TrialRecord]:
    return [
        TrialRecord("a", "finished", {"lr": 1e-4, "pooling": "mean"}, [125, 250, 375, 500], [60.0, 70.0, 74.0, 75.5]),
        TrialRecord("b", "finished", {"lr": 3e-5, "pooling": "cls"}, [125, 250, 375, 500], [55.0, 66.0, 71.0, 73.0]),
        TrialRecord("c", "pruned", {"lr": 1e-2, "pooling": "cls"}, [125], [40.0]),
        TrialRecord("d", "pruned", {"lr": 5e-3, "pooling": "mean"}, [125, 250], [58.0, 61.0]),
        TrialRecord("e", "infeasible", {"lr": 9e-2, "pooling": "mean"}),
        TrialRecord("f", "failed", {"lr": 2e-5, "pooling": "cls"}),
    ]


def _study() -> optuna.Study:
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    for i in range(12):
        trial = study.ask()
        lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
        pooling = trial.suggest_categorical("pooling", ["mean", "cls"])
        if i == 11:
            trial.set_constraint("diverged", 1.0)
        study.tell(trial, 80 - (math.log10(lr) + 4) ** 2 + (pooling == "mean"))
    return study


def _rows(path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_every_plot_with_its_data(tmp_path):
    written, skipped = sweep_plots(_study(), _records(), "stsb_dev", tmp_path)
    assert not skipped
    names = {p.name for p in written}
    assert {"learning_curves.png", "learning_curves.csv", "parallel_coordinate.png", "parallel_coordinate.csv",
            "param_importances.png", "param_importances.csv", "optimization_history.png"} <= names
    curves = _rows(tmp_path / "learning_curves.csv")
    assert [float(r["step"]) for r in curves if r["trial_id"] == "a"] == [125, 250, 375, 500]  # steps, not indices
    stops = [(r["trial_id"], float(r["step"])) for r in curves if r["stopped_here"] == "1"]
    assert stops == [("c", 125.0), ("d", 250.0)]
    parallel = {r["trial_id"]: r for r in _rows(tmp_path / "parallel_coordinate.csv")}
    assert set(parallel) == set("abcdef")  # pruned, infeasible and failed trials included
    assert float(parallel["d"]["stsb_dev"]) == 61.0 and parallel["e"]["stsb_dev"] == ""
    importance = _rows(tmp_path / "param_importances.csv")
    assert {r["param"] for r in importance} == {"lr", "pooling"}
    assert {r["n_trials"] for r in importance} == {"11"}  # the infeasible trial is not a basis


def test_too_few_trials_skip_the_importance_with_the_reason(tmp_path):
    study = optuna.create_study(direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"lr": 1e-3}, distributions={
        "lr": optuna.distributions.FloatDistribution(1e-5, 1e-1, log=True)}, value=1.0))
    written, skipped = sweep_plots(study, _records()[:1], "stsb_dev", tmp_path)
    assert "at least 2" in skipped["param_importances"]
    assert (tmp_path / "learning_curves.png").exists()


@pytest.mark.parametrize(("metrics", "error", "status"), [
    ({FINAL_KEY: 1.0}, False, "finished"), ({"training_iteration": 2}, False, "pruned"),
    ({FAILED_KEY: 1.0, INFEASIBLE_KEY: "diverged"}, False, "infeasible"), ({FAILED_KEY: 1.0}, False, "failed"),
    (None, True, "failed"),
])
def test_status_of_a_trial(metrics, error, status):
    assert trial_status(metrics, error) == status
