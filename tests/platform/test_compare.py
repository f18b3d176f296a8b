"""The comparison table's columns: only the params that differ between the trials that logged them."""

from __future__ import annotations

from mlflow.entities import Param, Run, RunData, RunInfo

from sentsweep.platform.report.compare import _searched


def _run(run_id: str, params: dict[str, str]) -> Run:
    info = RunInfo(run_id=run_id, experiment_id="0", user_id="u", status="FINISHED", start_time=0,
                   end_time=1, lifecycle_stage="active")
    return Run(info, RunData(params=[Param(k, v) for k, v in params.items()]))


def test_a_trial_without_params_does_not_widen_the_table() -> None:
    trials = [_run("a", {"lr": "1e-5", "epochs": "4"}), _run("b", {"lr": "2e-5", "epochs": "4"}), _run("c", {})]
    assert _searched(trials) == ["lr"]
