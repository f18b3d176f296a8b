"""A real ``mlflow server`` stopped mid-sweep and kept down until the sweep's driver has exited: the sweep finishes
and exits within 60 s of its last trial; once the server is back, ``sentsweep sync`` leaves MLflow with every
trial's full history, one run per trial, no duplicate metric point and no run left RUNNING.

The sweep's driver is a process of its own with its own local Ray; MLflow's client keeps its default retry budget
(about 4 minutes a call), which nothing on the sweep's path may wait out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.cli import main
from sentsweep.tracking.vocabulary import ROLE_TAG, STATUS_TAG, TRIAL_ID_TAG
from tests.tracking.restartable_mlflow import Server
from tools.harness.processes import end_group, repo_pythonpath

REPO = Path(__file__).resolve().parents[2]
DRIVER = """
import json, os, sys
import ray
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.sweep import run_sweep
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE

ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING",
         runtime_env={"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}})
config = SweepConfig.model_validate_json(open(sys.argv[1]).read())
outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False)
print("OUTCOME", json.dumps({"counts": outcome.counts, "parent": outcome.parent_run_id,
                             "experiment": outcome.experiment_id}))
"""


@pytest.fixture
def server(tmp_path, mlflow_template):
    found = Server(tmp_path, mlflow_template)
    found.start()
    yield found
    found.stop()


def _finished_in_folder(sweep_root: Path) -> list[float]:
    """When each trial that made its final report wrote it (the mtime of its ``result.json``), from the folder."""
    return [path.stat().st_mtime for path in sweep_root.glob("*/*/result.json") if '"final": 1.0' in path.read_text()]


def _wait(condition, driver: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert driver.poll() is None, f"the sweep ended before {what}"
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.3)


@pytest.mark.cluster  # a sweep in a process of its own, with its own Ray: run by make test-cluster (CI runs both)
def test_a_long_outage_neither_stops_nor_holds_the_sweep_and_sync_completes_mlflow(tmp_path, tiny_bert_dir,
                                                                                     server, capsys):
    from tests.platform.sweep_toy import toy_config

    config = toy_config(tmp_path, tiny_bert_dir, server.uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, tracking={"artifact_location": None},
                        fixed={"max_steps": 8, "sleep_s": 1.0}).resolved()
    (tmp_path / "config.json").write_text(config.model_dump_json())
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("RAY_ADDRESS", "MLFLOW_HTTP_REQUEST_"))}  # MLflow's own retry budget
    env.update(PYTHONPATH=repo_pythonpath())
    log_path = tmp_path / "driver.log"
    with log_path.open("w") as log:
        driver = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "config.json")],
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    client = MlflowClient(tracking_uri=server.uri)
    sweep_root = tmp_path / "ray_results"
    try:
        def training() -> bool:
            experiment = client.get_experiment_by_name("toy")
            runs = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'") if experiment else []
            return any("train_loss" in r.data.metrics for r in runs)

        _wait(training, driver, 180, "a trial's first report reached MLflow")
        server.stop()  # down until the driver has exited
        driver.wait(timeout=420)
        exited = time.time()
    finally:
        end_group(driver, grace=10)
    output = log_path.read_text()
    assert driver.returncode == 0, output[-4000:]
    outcome = json.loads(output.split("OUTCOME ", 1)[1].splitlines()[0])
    assert outcome["counts"] == {"finished": 2, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    finals = _finished_in_folder(sweep_root)
    assert len(finals) == 2 and exited - max(finals) < 60, f"exited {exited - max(finals):.0f} s after its last trial"
    assert "sentsweep sync" in output  # the driver said how MLflow is completed
    assert "MLflow has not taken all of the sweep's run yet" in output  # and that the parent run's writes wait

    server.start()
    sweep_dir = next(p for p in sweep_root.iterdir() if p.is_dir())
    capsys.readouterr()
    assert main(["sync", str(sweep_dir)]) == 0, capsys.readouterr()
    runs = client.search_runs([outcome["experiment"]], f"tags.`{ROLE_TAG}` = 'trial'")
    trial_ids = [r.data.tags[TRIAL_ID_TAG] for r in runs]
    assert len(runs) == 2 and len(set(trial_ids)) == 2  # one run per trial
    assert all(r.info.status == "FINISHED" for r in runs), [r.info.status for r in runs]
    for run in runs:
        assert run.data.params["lr"] and run.data.metrics["system/final"] == 1.0
        assert "system/wall_seconds" in run.data.metrics
        (results,) = sweep_dir.glob(f"*{run.data.tags[TRIAL_ID_TAG]}*/result.json")
        reports = [json.loads(line) for line in results.read_text().splitlines()]
        for key in ("train_loss", "stsb_dev"):  # every report logged once: as many points as reports
            history = client.get_metric_history(run.info.run_id, key)
            expected = Counter((int(r["step"]), r[key]) for r in reports if key in r)
            assert Counter((m.step, m.value) for m in history) == expected, f"{key} of {run.info.run_id}"
        assert sorted({m.step for m in client.get_metric_history(run.info.run_id, "train_loss")}) == [2, 4, 6, 8]
        assert {f.path for f in client.list_artifacts(run.info.run_id)} >= {"final_metrics.json", "history.jsonl"}
    parent = client.get_run(outcome["parent"])
    assert parent.info.status == "FINISHED" and parent.data.tags[STATUS_TAG] == "finished"
    assert sorted(r.info.run_name.split()[0] for r in runs) == ["t01", "t02"]  # named as the driver names them
    assert parent.data.metrics["trials_finished"] == 2
    assert main(["sync", str(sweep_dir)]) == 0  # again: nothing twice
    again = client.search_runs([outcome["experiment"]], f"tags.`{ROLE_TAG}` = 'trial'")
    assert sum(len(client.get_metric_history(r.info.run_id, "train_loss")) for r in again) == 8
