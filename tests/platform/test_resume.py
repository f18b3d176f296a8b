"""Kill the driver with SIGKILL mid-sweep, resume from the sweep folder: every trial ends exactly once,
one MLflow child run per trial, none left RUNNING, and a trial finished before the kill is not trained
again."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.search.study_store import load_study
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, PARENT_TAG, ROLE_TAG, TRIAL_ID_TAG
from tools.harness.processes import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]
# The driver to kill is a process of its own with its own local Ray (not the session's ``ray_session``); it
# imports the toy from the repository root, which it gets, as its workers do, on PYTHONPATH.
DRIVER = """
import sys
import ray
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.sweep import run_sweep
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE

ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
config = SweepConfig.model_validate_json(open(sys.argv[1]).read())
run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False)
"""


def _trial_runs(client: MlflowClient) -> list:
    experiment = client.get_experiment_by_name("toy")
    if experiment is None:
        return []
    return client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")


def _wait_for_a_finished_and_a_running_trial(client: MlflowClient, driver: subprocess.Popen,
                                             timeout: float = 240):
    """The moment to kill: one trial has finished and another is training (has logged a loss)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert driver.poll() is None, "the sweep ended before it could be killed"
        runs = _trial_runs(client)
        done = [r for r in runs if r.info.status == "FINISHED"]
        training = [r for r in runs if r.info.status == "RUNNING" and "train_loss" in r.data.metrics]
        if done and training:
            return done[0]
        time.sleep(0.3)
    pytest.fail("no moment with a finished and a training trial in time")


# About 65 s on a quiet 2-core machine.
@pytest.mark.cluster  # a sweep in a process of its own, with its own Ray: run by make test-cluster (CI runs both)
def test_sigkill_then_resume(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import locate
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, scheduler={"type": "fifo"},
                        fixed={"max_steps": 8, "sleep_s": 0.6}, max_failures=1).resolved()
    (tmp_path / "config.json").write_text(config.model_dump_json())
    (tmp_path / "driver.py").write_text(DRIVER)
    log = (tmp_path / "driver.log").open("w")
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = repo_pythonpath()
    driver = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "config.json")],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    client = MlflowClient(tracking_uri=tracking_uri)
    try:
        finished = _wait_for_a_finished_and_a_running_trial(client, driver)
    finally:
        # The driver and the Ray processes it started, at once (its own session): a worker left alive a
        # moment longer could finish its trial and close the run the test means to leave open.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        log.close()
    before = {r.data.tags[TRIAL_ID_TAG]: r.info.status for r in _trial_runs(client)}
    labels = {r.data.tags[TRIAL_ID_TAG]: r.info.run_name.split()[0] for r in _trial_runs(client)}
    assert list(before.values()).count("FINISHED") < 4  # killed mid-sweep: trials were left to run
    (sweep_dir,) = [p for p in (tmp_path / "ray_results").iterdir() if p.is_dir()]
    assert locate(str(sweep_dir)).read_manifest().parent_run_id

    outcome = resume_sweep(str(sweep_dir), trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False,
                           echo=lambda line: None)

    assert outcome.counts == {"finished": 4, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    runs = _trial_runs(client)
    assert len(runs) == 4 == len({r.data.tags[TRIAL_ID_TAG] for r in runs})
    assert all(r.data.tags[PARENT_TAG] == outcome.parent_run_id for r in runs)
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 4
    after = {r.data.tags[TRIAL_ID_TAG]: r.info.run_name.split()[0] for r in runs}
    kept = set(labels) & set(after)  # a trial Tune started after its last snapshot is not resumed: its run goes
    assert kept and {t: after[t] for t in kept} == {t: labels[t] for t in kept}, "a resume renamed a trial"
    assert sorted(after.values()) == ["t01", "t02", "t03", "t04"]
    for run in runs:  # every trial trained each step once (a restored one continues from its checkpoint)
        steps = [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")]
        assert sorted(set(steps)) == [2, 4, 6, 8]
    again = client.get_run(finished.info.run_id)
    steps = [m.step for m in client.get_metric_history(again.info.run_id, "train_loss")]
    assert steps == [2, 4, 6, 8], "a trial finished before the kill was trained again"
    print(f"trial finished before the kill: attempt {again.data.tags[ATTEMPT_TAG]}; before resume: {before}")
    parent = client.get_run(outcome.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.data.metrics["trials_finished"] == 4
    # the study's journal: one Optuna trial per Tune trial (a trial Tune lost with the driver told FAIL), none RUNNING
    study = load_study(locate(str(sweep_dir)))
    per_trial = Counter(t.user_attrs["tune_trial_id"] for t in study.trials)
    assert set(per_trial.values()) == {1}, per_trial
    assert sorted(t.state.name for t in study.trials if t.state.name != "FAIL") == ["COMPLETE"] * 4
    # a resumed trial clears what its killed attempt staged (a trial Tune started after its last snapshot is
    # not resumed at all: its folder is pruned after the sweep, platform/folder/retention.py)
    known = {Path(r.path).name for r in outcome.results}
    assert not [p for p in sweep_dir.glob("*/work") if p.parent.name in known], "a work folder outlived the resume"
