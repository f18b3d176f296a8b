"""A real ``mlflow server`` stopped mid-sweep for longer than the client's retry budget, then restarted: the
sweep finishes, and MLflow ends with every trial's full history, one run per trial, no duplicate metric
point and no run left RUNNING.

The sweep's driver is a process of its own with its own local Ray, whose environment (and its workers', via
``runtime_env``) shortens MLflow's retry budget to nothing: no retries, a 5 s timeout."""

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

from sentsweep.platform.tracking_journals import replay_sweep_journals
from sentsweep.tracking.journal import TRIAL_JOURNAL
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.vocabulary import ROLE_TAG, TRIAL_ID_TAG
from tests.tracking.restartable_mlflow import RETRY_ENV, Server
from tools.harness.processes import end_group, repo_pythonpath

REPO = Path(__file__).resolve().parents[2]
DRIVER = """
import json, os, sys
import ray
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.sweep import run_sweep
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE

env = {k: os.environ[k] for k in json.loads(sys.argv[2])}
env["PYTHONPATH"] = os.environ["PYTHONPATH"]
ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING",
         runtime_env={"env_vars": env})
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


def _journals_with_a_finish(sweep_root: Path) -> list[Path]:
    found = []
    for path in sweep_root.glob(f"*/*/{TRIAL_JOURNAL}"):
        ops = [json.loads(line).get("op") for line in path.read_text().splitlines() if line.strip()]
        if "finish" in ops:
            found.append(path)
    return found


def _wait(condition, driver: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert driver.poll() is None, f"the sweep ended before {what}"
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.3)


def test_an_outage_longer_than_the_retry_budget_loses_nothing(tmp_path, tiny_bert_dir, server):
    from tests.platform.sweep_toy import toy_config

    config = toy_config(tmp_path, tiny_bert_dir, server.uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, tracking={"artifact_location": None},
                        fixed={"max_steps": 8, "sleep_s": 1.0}).resolved()
    (tmp_path / "config.json").write_text(config.model_dump_json())
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env.update(RETRY_ENV, PYTHONPATH=repo_pythonpath())
    log_path = tmp_path / "driver.log"
    with log_path.open("w") as log:
        driver = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "config.json"),
                                   json.dumps(sorted(RETRY_ENV))], stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True, env=env)
    client = MlflowClient(tracking_uri=server.uri)
    sweep_root = tmp_path / "ray_results"
    try:
        def training() -> bool:
            experiment = client.get_experiment_by_name("toy")
            runs = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'") if experiment else []
            return any("train_loss" in r.data.metrics for r in runs)

        _wait(training, driver, 180, "a trial logged its first report")
        server.stop()
        down_at = time.monotonic()
        # Down until the first trial has finished inside the outage (its worker journaled its end, the
        # driver could not close its run), and for longer than the client's whole retry budget (5 s).
        _wait(lambda: bool(_journals_with_a_finish(sweep_root)), driver, 120, "a trial finished in the outage")
        time.sleep(max(0.0, 8 - (time.monotonic() - down_at)))
        server.start()
        back_before_the_end = driver.poll() is None
        driver.wait(timeout=240)
    finally:
        end_group(driver, grace=10)
    output = log_path.read_text()
    assert driver.returncode == 0, output[-4000:]
    assert "unreachable" in output  # the outage was seen, and survived
    outcome = json.loads(output.split("OUTCOME ", 1)[1].splitlines()[0])
    assert outcome["counts"] == {"finished": 2, "pruned": 0, "failed": 0}
    # Back before the end: the trials and the driver delivered everything; else the recovery command does.
    sweep_dir = next(p for p in sweep_root.iterdir() if p.is_dir())
    replayed = replay_sweep_journals(str(sweep_dir), server.uri, sweep_dir.name,
                                     SweepScope(outcome["experiment"], outcome["parent"]))
    assert replayed.pending == 0 and (back_before_the_end or "tracking entries wait in" in output)

    runs = client.search_runs([outcome["experiment"]], f"tags.`{ROLE_TAG}` = 'trial'")
    trial_ids = [r.data.tags[TRIAL_ID_TAG] for r in runs]
    assert len(runs) == 2 and len(set(trial_ids)) == 2  # one run per trial
    assert all(r.info.status == "FINISHED" for r in runs), [r.info.status for r in runs]
    for run in runs:
        assert run.data.params["lr"] and run.data.metrics["final"] == 1.0 and "wall_seconds" in run.data.metrics
        for key in ("train_loss", "stsb_dev"):
            history = client.get_metric_history(run.info.run_id, key)
            points = Counter((m.step, m.timestamp, m.value) for m in history)
            assert max(points.values()) == 1, f"duplicate {key} points in {run.info.run_id}"
        assert sorted({m.step for m in client.get_metric_history(run.info.run_id, "train_loss")}) == [2, 4, 6, 8]
    parent = client.get_run(outcome["parent"])
    assert parent.info.status == "FINISHED" and parent.data.metrics["trials_finished"] == 2
