"""The sweep's plots: learning curves over training steps with ASHA's stops marked, parallel coordinates that keep
pruned trials (at their last value) and trials without a value, an optimisation history of every trial by its
number, parameter importance with its trial count (none below its threshold); each PNG with its data as CSV."""

from __future__ import annotations

import csv
import math

import optuna
import pytest

from sentsweep.platform.report.plots import MIN_IMPORTANCE_TRIALS, TrialRecord, sweep_plots, trial_status
from sentsweep.platform.results import FINAL_KEY
from sentsweep.trainables.report_keys import FAILED_KEY, INFEASIBLE_KEY


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
            "param_importances.png", "param_importances.csv", "optimization_history.png",
            "optimization_history.csv"} <= names
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
    history = _rows(tmp_path / "optimization_history.csv")
    assert [(r["trial"], r["number"], r["status"]) for r in history] == [
        ("a", "1", "finished"), ("b", "2", "finished"), ("c", "3", "pruned"), ("d", "4", "pruned"),
        ("e", "5", "infeasible"), ("f", "6", "failed")]  # every trial, pruned and failed ones too
    assert [r["stsb_dev"] for r in history] == ["75.5", "73.0", "40.0", "61.0", "", ""]
    assert [r["best_so_far"] for r in history] == ["75.5"] * 6  # finished trials only


def test_a_trial_is_numbered_by_its_label_in_every_plot(tmp_path):
    records = [TrialRecord(t, s, {"lr": lr}, [10], [v], label=f"t0{i}")
               for i, (t, s, lr, v) in enumerate([("x1", "finished", 1e-4, 70.0), ("x2", "pruned", 1e-3, 50.0)], 1)]
    sweep_plots(None, records, "stsb_dev", tmp_path, mode="min")
    assert [r["trial"] for r in _rows(tmp_path / "optimization_history.csv")] == ["t01", "t02"]
    assert {r["trial"] for r in _rows(tmp_path / "learning_curves.csv")} == {"t01", "t02"}
    assert {r["trial"] for r in _rows(tmp_path / "parallel_coordinate.csv")} == {"t01", "t02"}


def test_too_few_trials_skip_the_importance_with_the_reason(tmp_path):
    study = optuna.create_study(direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"lr": 1e-3}, distributions={
        "lr": optuna.distributions.FloatDistribution(1e-5, 1e-1, log=True)}, value=1.0))
    written, skipped = sweep_plots(study, _records()[:1], "stsb_dev", tmp_path)
    assert f"at least {MIN_IMPORTANCE_TRIALS}" in skipped["param_importances"]
    assert (tmp_path / "learning_curves.png").exists()


def test_the_importance_needs_its_threshold_of_finished_feasible_trials(tmp_path):
    study = _study()  # 11 feasible trials of 12
    few = optuna.create_study(direction="maximize")
    few.add_trials([t for t in study.trials if not t.constraints][:MIN_IMPORTANCE_TRIALS - 1])
    _, skipped = sweep_plots(few, _records(), "stsb_dev", tmp_path)
    assert skipped["param_importances"].startswith(f"ValueError: {MIN_IMPORTANCE_TRIALS - 1} finished feasible")
    enough = optuna.create_study(direction="maximize")
    enough.add_trials([t for t in study.trials if not t.constraints][:MIN_IMPORTANCE_TRIALS])
    _, skipped = sweep_plots(enough, _records(), "stsb_dev", tmp_path)
    assert "param_importances" not in skipped
    assert {r["n_trials"] for r in _rows(tmp_path / "param_importances.csv")} == {str(MIN_IMPORTANCE_TRIALS)}


@pytest.mark.parametrize(("metrics", "error", "status"), [
    ({FINAL_KEY: 1.0}, False, "finished"), ({"training_iteration": 2, "done": True}, False, "pruned"),
    ({"training_iteration": 2, "done": False}, False, "stopped"), ({"trial_id": "a"}, False, "not started"),
    ({FAILED_KEY: 1.0, INFEASIBLE_KEY: "diverged"}, False, "infeasible"), ({FAILED_KEY: 1.0}, False, "failed"),
    (None, True, "failed"),
])
def test_status_of_a_trial(metrics, error, status):
    assert trial_status(metrics, error) == status
