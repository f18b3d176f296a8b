"""SIGTERM stops ``sentsweep sweep`` gracefully and ``sentsweep resume`` finishes it: the real command line in a
process of its own (its own local Ray), the toy method registered as a plug-in would register it.

Checked: the exit status (75) and the resume command printed; the parent run KILLED with
``sentsweep.status=interrupted``; no child run left RUNNING, the unfinished ones KILLED ``interrupted``; a resume
with a changed config refused with the fields that differ; a second resume while the first holds the sweep
folder's lock refused, naming the holder; the first resume finishing with one run per trial, all FINISHED.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.evaluation.sts import STSB_DEV
from sentsweep.platform.driver.interrupt import INTERRUPTED_EXIT
from sentsweep.platform.folder.lock import LockRecord
from sentsweep.platform.folder.lock_stores import LOCK_FILE
from sentsweep.platform.results import evaluation_result
from sentsweep.tracking.vocabulary import (
    INTERRUPTED_REASON,
    OUTCOME_TAG,
    REASON_TAG,
    ROLE_TAG,
    STATUS_TAG,
    TRIAL_ID_TAG,
)
from sentsweep.trainables.checkpoints import CHECKPOINT_MARKER
from sentsweep.trainables.report_keys import DRAINING_KEY, EVALUATIONS_KEY
from tests.platform.sweep_toy import toy_config
from tools.harness.processes import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]
# ``sentsweep`` with the toy method and space in the registries (what a plug-in package would add).
CLI = """
import sys
from sentsweep.cli import main
from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.registry import METHODS
from tests.platform.sweep_toy import TOY, TOY_SPACE

METHODS["toy"] = TOY
SEARCH_SPACES["toy"] = TOY_SPACE
sys.exit(main(sys.argv[1:]))
"""


def _start(tmp_path: Path, name: str, *argv: str) -> tuple[subprocess.Popen, Path]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = repo_pythonpath()
    log = tmp_path / f"{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, str(tmp_path / "cli.py"), *argv], stdout=out,
                                   stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True)
    return process, log


def _wait(process: subprocess.Popen, log: Path, timeout: float) -> int:
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the command did not end in {timeout:.0f}s:\n{log.read_text()[-3000:]}")


def _runs(client: MlflowClient, role: str) -> list:
    experiment = client.get_experiment_by_name("toy")
    if experiment is None:
        return []
    return client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = '{role}'")


def _until(condition, what: str, process: subprocess.Popen, log: Path, timeout: float = 240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the command ended before {what}:\n{log.read_text()[-3000:]}"
        found = condition()
        if found:
            return found
        time.sleep(0.3)
    pytest.fail(f"no {what} in {timeout:.0f}s")


# About 3 minutes on a quiet 2-core machine (three Ray starts).
@pytest.mark.cluster  # a sweep in a process of its own, with its own Ray: run by make test-cluster (CI runs both)
def test_sigterm_interrupts_then_resume_finishes(tmp_path, tiny_bert_dir, tracking_uri, capsys,
                                                monkeypatch) -> None:
    from sentsweep.cli import main
    from sentsweep.search_spaces import SEARCH_SPACES
    from sentsweep.trainables.registry import METHODS
    from tests.platform.sweep_toy import TOY, TOY_SPACE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, scheduler={"type": "fifo"},
                        fixed={"max_steps": 8, "sleep_s": 0.6}, max_failures=1)
    (tmp_path / "toy.yaml").write_text(config.to_yaml())
    (tmp_path / "cli.py").write_text(CLI)
    client = MlflowClient(tracking_uri=tracking_uri)

    sweep, log = _start(tmp_path, "sweep", "sweep", "toy.yaml", "--address", "local", "--no-finalize")
    _until(lambda: [r for r in _runs(client, "trial")
                    if r.info.status == "RUNNING" and "train_loss" in r.data.metrics], "a training trial", sweep, log)
    os.kill(sweep.pid, signal.SIGTERM)
    assert _wait(sweep, log, 180) == INTERRUPTED_EXIT, log.read_text()[-3000:]
    (sweep_dir,) = [p for p in (tmp_path / "ray_results").iterdir() if p.is_dir()]
    assert f"sentsweep resume {sweep_dir}" in log.read_text()
    (parent,) = _runs(client, "sweep")
    assert parent.info.status == "KILLED" and parent.data.tags[STATUS_TAG] == "interrupted"
    assert "SIGTERM" in parent.data.tags[REASON_TAG]
    trials = _runs(client, "trial")
    assert trials and not [r for r in trials if r.info.status == "RUNNING"]
    assert [r for r in trials if r.data.tags.get(OUTCOME_TAG) == "interrupted" and r.info.status == "KILLED"
            and r.data.tags.get(REASON_TAG) == INTERRUPTED_REASON]
    assert not [r for r in trials if r.info.status == "FAILED"]
    assert LockRecord.parse((sweep_dir / LOCK_FILE).read_bytes()).released, "the interrupted sweep gave its lock back"

    monkeypatch.setitem(METHODS, "toy", TOY)
    monkeypatch.setitem(SEARCH_SPACES, "toy", TOY_SPACE)
    capsys.readouterr()
    assert main(["resume", str(sweep_dir), "--set", "num_samples=6", "--set", "fixed.max_steps=10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fixed.max_steps (8 -> 10)" in err and "num_samples (4 -> 6)" in err

    resume, log = _start(tmp_path, "resume", "resume", str(sweep_dir), "--address", "local", "--no-finalize")

    def resume_holds_the_lock() -> LockRecord | None:
        held = LockRecord.parse((sweep_dir / LOCK_FILE).read_bytes())
        return held if held is not None and held.pid == resume.pid and not held.released else None

    _until(resume_holds_the_lock, "the resume's lock", resume, log)
    assert main(["resume", str(sweep_dir), "--address", "local", "--no-finalize"]) == 2
    err = capsys.readouterr().err
    assert f"(pid {resume.pid})" in err and "being run by" in err and err.count("\n") == 1
    assert _wait(resume, log, 300) == 0, log.read_text()[-3000:]

    trials = _runs(client, "trial")
    assert len(trials) == 4 == len({r.data.tags[TRIAL_ID_TAG] for r in trials})
    assert sorted(r.info.status for r in trials) == ["FINISHED"] * 4
    parent = client.get_run(parent.info.run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags[STATUS_TAG] == "finished"
    assert LockRecord.parse((sweep_dir / LOCK_FILE).read_bytes()).released
    assert "sentsweep.lease" not in parent.data.tags, "no lock in MLflow"


def _latest_checkpoint_step(sweep_dir: Path) -> int:
    """The step of the newest checkpoint Tune kept for the sweep's one trial."""
    (trial,) = [p for p in sweep_dir.iterdir() if p.is_dir() and p.name.startswith("train_toy")]
    steps = [json.loads((c / CHECKPOINT_MARKER).read_text())["step"] for c in trial.glob("checkpoint_*")]
    return max(steps, default=0)


# About 2 minutes on a quiet 2-core machine (two Ray starts).
@pytest.mark.slow
def test_sigterm_drains_running_trial_then_resume_continues_from_step_reached(tmp_path, tiny_bert_dir,
                                                                              tracking_uri) -> None:
    """A SIGTERM between two cadence checkpoints: the running trial checkpoints at the step it reached, and the
    resume trains only the remaining steps (the toy logs one line per training step, both sessions together)."""
    steps_log = tmp_path / "steps.log"
    max_steps = 30
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, scheduler={"type": "fifo"},
                        max_failures=1, fixed={"max_steps": max_steps, "eval_every": 5, "checkpoint_every": 100,
                                               "sleep_s": 0.3, "step_log": str(steps_log)})
    (tmp_path / "toy.yaml").write_text(config.to_yaml())
    (tmp_path / "cli.py").write_text(CLI)
    client = MlflowClient(tracking_uri=tracking_uri)

    def steps() -> int:
        return len(steps_log.read_text().splitlines()) if steps_log.exists() else 0

    sweep, log = _start(tmp_path, "sweep", "sweep", "toy.yaml", "--address", "local", "--no-finalize")
    _until(lambda: steps() >= 8, "8 training steps", sweep, log)  # past the evaluation at step 5, no checkpoint
    os.kill(sweep.pid, signal.SIGTERM)
    assert _wait(sweep, log, 180) == INTERRUPTED_EXIT, log.read_text()[-3000:]
    stopped_at = steps()
    assert 8 <= stopped_at < max_steps
    (sweep_dir,) = [p for p in (tmp_path / "ray_results").iterdir() if p.is_dir()]
    # the cadence (every 100 evaluations) wrote none: this checkpoint is the drain's, at the step reached
    assert _latest_checkpoint_step(sweep_dir) == stopped_at
    (run,) = _runs(client, "trial")
    assert run.info.status == "KILLED" and run.data.tags[REASON_TAG] == INTERRUPTED_REASON

    resume, log = _start(tmp_path, "resume", "resume", str(sweep_dir), "--address", "local", "--no-finalize")
    assert _wait(resume, log, 300) == 0, log.read_text()[-3000:]
    assert steps() == max_steps, f"stopped at {stopped_at}, the resume trained {steps() - stopped_at} steps"
    (run,) = _runs(client, "trial")
    assert run.info.status == "FINISHED"
    # the draining report is no evaluation: no metric of it, the dev metric only at evaluation steps
    assert DRAINING_KEY not in run.data.metrics
    history = client.get_metric_history(run.info.run_id, STSB_DEV)
    assert sorted({m.step for m in history}) == list(range(5, max_steps + 1, 5))
    # ASHA's and Optuna's count: the evaluations, not Tune's reports (the draining one among them)
    (trial,) = [p for p in sweep_dir.iterdir() if p.is_dir() and p.name.startswith("train_")]
    reports = [json.loads(line) for line in (trial / "result.json").read_text().splitlines() if line.strip()]
    evaluations = [r for r in reports if "train_loss" in r]
    assert [int(r[EVALUATIONS_KEY]) for r in evaluations] == list(range(1, max_steps // 5 + 1))
    assert [evaluation_result(r)["training_iteration"] for r in evaluations] == list(range(1, max_steps // 5 + 1))
