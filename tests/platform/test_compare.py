"""The comparison tables: only the params that differ between the trials that logged them, one label per trial in
every table, outcomes from their tag (a pruned trial's run is FINISHED), bookkeeping read under ``system/``; the
protocol table folded to one row per protocol; the compare plots' data."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, Run, RunData, RunInfo, RunTag

from sentsweep.platform.report.compare import (
    SweepRuns,
    _searched,
    compare,
    compare_plots,
    labels_by_id,
    render,
    sweep_row,
    sweep_runs,
    trial_rows,
)
from sentsweep.platform.report.protocols import fold_protocols
from sentsweep.tracking.vocabulary import (
    CHANGED_TAG,
    CONFIRMATION_ROLE,
    OUTCOME_TAG,
    PARENT_TAG,
    ROLE_TAG,
    TRIAL_ID_TAG,
    TRIAL_NUMBER_TAG,
)


def _run(run_id: str, params: dict[str, str] | None = None, tags: dict[str, str] | None = None,
         metrics: dict[str, float] | None = None, status: str = "FINISHED") -> Run:
    info = RunInfo(run_id=run_id, experiment_id="0", user_id="u", status=status, start_time=0,
                   end_time=1, lifecycle_stage="active")
    return Run(info, RunData(params=[Param(k, v) for k, v in (params or {}).items()],
                             tags=[RunTag(k, v) for k, v in (tags or {}).items()],
                             metrics=[Metric(k, v, 0, 0) for k, v in (metrics or {}).items()]))


def test_a_trial_without_params_does_not_widen_the_table() -> None:
    trials = [_run("a", {"lr": "1e-5", "epochs": "4"}), _run("b", {"lr": "2e-5", "epochs": "4"}), _run("c", {})]
    assert _searched(trials) == ["lr"]


def _trial(number: int, tune_id: str, outcome: str | None, status: str, **metrics: float) -> Run:
    tags = {TRIAL_ID_TAG: tune_id, TRIAL_NUMBER_TAG: str(number), **({OUTCOME_TAG: outcome} if outcome else {})}
    return _run(tune_id, {"lr": str(number)}, tags, metrics, status)


def test_every_table_names_a_trial_by_its_label_and_its_outcome() -> None:
    sweep = _run("s", {"metric": "stsb_dev"}, {"sentsweep.best_trial_id": "bb"}, {"best_stsb_dev": 80.0})
    trials = [_trial(1, "aa", "finished", "FINISHED", best_stsb_dev=80.0, **{"system/step": 16.0,
                                                                           "system/wall_seconds": 9.0}),
              _trial(2, "bb", "pruned", "FINISHED", stsb_dev=60.0, step=8.0,  # bookkeeping logged before system/
                     **{"system/wall_seconds": 5.0, "system/time_total_s": 14.0}),  # restored: 14 s over 2 attempts
              _trial(3, "cc", None, "KILLED")]  # a run ended before outcomes were tagged
    rows = trial_rows(sweep, trials, _searched(trials))
    assert [(r["trial"], r["status"], r["step"]) for r in rows][:2] == [("t01", "finished", 16.0),
                                                                       ("t02", "pruned", 8.0)]
    assert rows[2]["trial"] == "t03" and rows[2]["status"] == "pruned"
    assert rows[0]["wall_s"] == 9.0 and rows[1]["wall_s"] == 14.0
    row = sweep_row(sweep, trials)
    assert (row["finished"], row["pruned"], row["best_trial"]) == (1, 2, "t02")
    assert labels_by_id(trials) == {"aa": "t01", "bb": "t02", "cc": "t03"}


@pytest.mark.parametrize(("mode", "best"), [("max", (85.0, "t03")), ("min", (70.0, "t01"))])
def test_a_sweep_without_finalize_shows_its_best_finished_trial(mode: str, best: tuple[float, str]) -> None:
    """``--no-finalize`` sets no best metric or tag on the parent: the row ranks the finished trials itself; a
    pruned trial's value, higher or lower, never counts."""
    sweep = _run("s", {"metric": "stsb_dev", "mode": mode})
    trials = [_trial(1, "aa", "finished", "FINISHED", best_stsb_dev=70.0),
              _trial(2, "bb", "pruned", "FINISHED", best_stsb_dev=90.0 if mode == "max" else 10.0),
              _trial(3, "cc", "finished", "FINISHED", best_stsb_dev=85.0)]
    row = sweep_row(sweep, trials)
    assert (row["best"], row["best_trial"]) == best
    assert math.isnan(sweep_row(sweep, trials[1:2])["best"]) and sweep_row(sweep, trials[1:2])["best_trial"] == ""


def test_a_confirmed_sweep_shows_its_winners_interval_and_whether_it_changed() -> None:
    metrics = {"confirmed_stsb_dev_mean": 81.0, "confirmed_stsb_dev_low": 79.5, "confirmed_stsb_dev_high": 82.5,
               "sweep_wall_seconds": 30.0, "gpu_seconds": 12.0}
    sweep = _run("s", {"metric": "stsb_dev"}, {CHANGED_TAG: "true"}, metrics)
    row = sweep_row(sweep, [])
    assert (row["confirmed"], row["confirmed_low"], row["confirmed_high"]) == (81.0, 79.5, 82.5)
    assert (row["winner_changed"], row["wall_s"], row["gpu_s"]) == ("true", 30.0, 12.0)
    assert "confirmed" not in sweep_row(_run("t", {"metric": "stsb_dev"}), [])


def test_compare_shows_figures_as_the_sweeps_own_lines_and_settings_as_logged() -> None:
    """A figure reads ``83.20`` as in the sweep's progress and winner lines; settings, steps, counts and seconds
    keep their shortest form."""
    sweep = _run("s", {"metric": "stsb_dev"}, {"sentsweep.best_trial_id": "aa"},
                 {"best_stsb_dev": 83.2, "sweep_wall_seconds": 30.0})
    trials = [_run(tune_id, {"lr": lr, "scale": scale}, {TRIAL_ID_TAG: tune_id, TRIAL_NUMBER_TAG: str(n),
                                                          OUTCOME_TAG: "finished"},
                   {"best_stsb_dev": value, "sts_avg7": 79.456, "system/step": 300.0})
              for n, tune_id, lr, scale, value in ((1, "aa", "2e-05", "22.4", 83.2), (2, "bb", "3e-05", "20", 0.5))]
    sweeps, table = compare(None, found=[SweepRuns(sweep, trials, None)])
    text = render(sweeps, table)
    sweeps_part, trials_part = text.split("## Trials")
    assert "| 83.20 | t01 |" in sweeps_part and "| 30 |" in sweeps_part
    assert "| t01 | finished | 83.20 | 300 | 79.46 | 2e-05 | 22.4 |" in trials_part
    assert "| t02 | finished | 0.5 | 300 | 79.46 | 3e-05 | 20 |" in trials_part
    assert render(sweeps, table, "csv").splitlines()[1].startswith(",t01,finished,83.2,300.0,79.456,2e-05,22.4")


def test_the_protocol_table_folds_to_one_row_per_protocol() -> None:
    parts = {"aggregation": "spearman", "classifier": "none", "max length": "max_length 32", "pooling": "mean",
             "precision": "float32", "eval code": "e1", "code": "c1"}
    table = pd.DataFrame([{"metric": f"sts{i}_test", "protocol": f"id{i}", "runs": 2, "task/split": f"sts{i}/test",
                           "data": f"data {i}", **parts} for i in range(6)]
                         + [{"metric": "stsb_dev", "protocol": "idd", "runs": 4, "task/split": "stsb/dev",
                             "data": "data d", **parts, "max length": "max_length 128"}])
    folded = fold_protocols(table)
    assert len(folded) == 2
    first = folded.iloc[0]
    assert (first["metrics"], first["figures"], first["max length"]) == (6, 12, "max_length 32")
    assert first["examples"] == "sts0_test, sts1_test, sts2_test, sts3_test (+2)"


def test_compare_plots_draw_every_trial_numbered_as_in_the_tables(tracking_uri: str, tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("plots")
    sweep = client.create_run(experiment, tags={ROLE_TAG: "sweep", "sentsweep.sweep": "s1"})
    client.log_param(sweep.info.run_id, "metric", "stsb_dev")
    for number, tune_id, outcome, values in ((2, "bb", "pruned", [50.0]), (1, "aa", "finished", [60.0, 70.0])):
        run = client.create_run(experiment, tags={PARENT_TAG: sweep.info.run_id, ROLE_TAG: "trial",
                                                  TRIAL_ID_TAG: tune_id, TRIAL_NUMBER_TAG: str(number),
                                                  OUTCOME_TAG: outcome})
        for step, value in enumerate(values, 1):
            client.log_metric(run.info.run_id, "stsb_dev", value, step=8 * step)
        client.set_terminated(run.info.run_id, "FINISHED")
    paths = compare_plots(client, sweep_runs(client, sweeps=[sweep.info.run_id]), tmp_path)
    assert [p.name for p in paths] == ["best_so_far.png", "dev_curves.png"]
    with (tmp_path / "best_so_far.csv").open() as f:
        best = list(csv.DictReader(f))
    assert [(r["trial"], r["number"], r["best_so_far"]) for r in best] == [("t01", "1", "70.0"), ("t02", "2", "70.0")]
    with (tmp_path / "dev_curves.csv").open() as f:
        curves = list(csv.DictReader(f))
    assert [(r["trial"], r["outcome"], r["points"]) for r in curves if r["trial"] == "t02"] == [("t02", "pruned", "1")]


def test_a_sweeps_trials_and_confirmation_run_come_from_one_search(tracking_uri: str) -> None:
    client = MlflowClient(tracking_uri)
    experiment = client.create_experiment("one-search")
    sweep = client.create_run(experiment, tags={ROLE_TAG: "sweep", "sentsweep.sweep": "s1"})
    below = {PARENT_TAG: sweep.info.run_id}
    stage = client.create_run(experiment, tags={**below, ROLE_TAG: CONFIRMATION_ROLE})
    for number in (2, 1):
        client.create_run(experiment, tags={**below, ROLE_TAG: "trial", TRIAL_NUMBER_TAG: str(number)})
    searches = []
    search_runs = client.search_runs
    client.search_runs = lambda *args, **kwargs: searches.append(kwargs.get("filter_string")) or search_runs(
        *args, **kwargs)
    (found,) = sweep_runs(client)
    assert len(searches) == 2  # the sweeps, then everything below this one's parent
    assert [r.data.tags[TRIAL_NUMBER_TAG] for r in found.trials] == ["1", "2"]
    assert found.stage is not None and found.stage.info.run_id == stage.info.run_id
    compare(client, found=[found])
    assert len(searches) == 2  # the tables ask nothing more of the runs
