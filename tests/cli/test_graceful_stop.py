"""SIGTERM stops ``sentsweep sweep`` gracefully and ``sentsweep resume`` finishes it: the real command line in a
process of its own (its own local Ray), the toy method registered as a plug-in would register it.

Checked: the exit status (75) and the resume command printed; the parent run KILLED with
``sentsweep.status=interrupted``; no child run left RUNNING, the unfinished ones KILLED ``interrupted``; a resume
with a changed config refused with the fields that differ; a second resume while the first holds the lease
refused, naming the holder; the first resume finishing with one run per trial, all FINISHED.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.interrupt import INTERRUPTED_EXIT, INTERRUPTED_REASON
from sentsweep.platform.lease import LEASE_TAG, LeaseRecord
from sentsweep.platform.sweep_state import STATUS_TAG
from sentsweep.tracking.vocabulary import REASON_TAG, ROLE_TAG, TRIAL_ID_TAG

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
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
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
    assert [r for r in trials if r.data.tags.get(REASON_TAG) == INTERRUPTED_REASON and r.info.status == "KILLED"]
    assert not [r for r in trials if r.info.status == "FAILED"]

    monkeypatch.setitem(METHODS, "toy", TOY)
    monkeypatch.setitem(SEARCH_SPACES, "toy", TOY_SPACE)
    capsys.readouterr()
    assert main(["resume", str(sweep_dir), "--set", "num_samples=6", "--set", "fixed.max_steps=10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fixed.max_steps (8 -> 10)" in err and "num_samples (4 -> 6)" in err

    resume, log = _start(tmp_path, "resume", "resume", str(sweep_dir), "--address", "local", "--no-finalize")
    holder = _until(lambda: LeaseRecord.parse(client.get_run(parent.info.run_id).data.tags.get(LEASE_TAG)),
                    "a lease", resume, log)
    assert holder.pid == resume.pid
    assert main(["resume", str(sweep_dir), "--address", "local", "--no-finalize"]) == 2
    err = capsys.readouterr().err
    assert f"(pid {resume.pid})" in err and "being run by" in err and err.count("\n") == 1
    assert _wait(resume, log, 300) == 0, log.read_text()[-3000:]

    trials = _runs(client, "trial")
    assert len(trials) == 4 == len({r.data.tags[TRIAL_ID_TAG] for r in trials})
    assert sorted(r.info.status for r in trials) == ["FINISHED"] * 4
    parent = client.get_run(parent.info.run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags[STATUS_TAG] == "finished"
    assert LEASE_TAG not in parent.data.tags
