"""The sweep budget: compute counted from the trials' reports once per attempt, kept in the sweep folder across a
SIGKILL and a resume (downtime never counted), and a sweep stopped by it: no new trial, the running ones finish."""

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

from sentsweep.platform.budget import BUDGET_FILE, STOP_REASON_TAG, BudgetMeter, record_budget
from sentsweep.platform.config import BudgetConfig
from sentsweep.platform.storage import locate
from sentsweep.trainables.method import ATTEMPT_SECONDS_KEY, ATTEMPT_STARTED_KEY, GPUS_KEY
from tools.harness.processes import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]


def _report(started: float, seconds: float, gpus: float = 0.0) -> dict[str, float]:
    return {ATTEMPT_STARTED_KEY: started, ATTEMPT_SECONDS_KEY: seconds, GPUS_KEY: gpus}


def test_each_attempt_is_counted_once(tmp_path):
    meter = BudgetMeter(BudgetConfig(gpu_hours=1.0), locate(str(tmp_path)))
    assert meter.add_report("a", _report(100.0, 10.0)) == 10.0
    assert meter.add_report("a", _report(100.0, 25.0)) == 15.0
    assert meter.add_report("a", _report(100.0, 25.0)) == 0.0  # the same report again (on_trial_complete)
    assert meter.add_report("a", _report(200.0, 4.0)) == 4.0  # a new attempt (restored): counted from its start
    assert meter.add_report("b", _report(150.0, 8.0, gpus=0.5)) == 4.0  # a half GPU: half the seconds
    assert meter.add_report("b", {**_report(150.0, 30.0, gpus=0.5), "restored_from_mlflow": 1.0}) == 0.0
    assert meter.add_report("c", {"stsb_dev": 1.0}) == 0.0  # no compute in it (a skipped trial)
    count = meter.count
    assert (count.compute_seconds, count.trial_seconds, count.gpu_seconds) == (33.0, 37.0, 4.0)
    again = BudgetMeter.load(BudgetConfig(gpu_hours=1.0), locate(str(tmp_path)))
    assert again.count == count  # saved on every counted report
    assert again.add_report("a", _report(200.0, 6.0)) == 2.0  # the count continues where it was


def test_spent_when_a_limit_is_reached(tmp_path):
    meter = BudgetMeter(BudgetConfig(gpu_hours=10 / 3600), locate(str(tmp_path)))
    meter.add_report("a", _report(1.0, 9.0))
    assert not meter.spent()
    meter.add_report("a", _report(1.0, 10.5))
    assert meter.spent() and "gpu_hours" in meter.count.spent
    assert json.loads((tmp_path / BUDGET_FILE).read_text())["spent"] == meter.count.spent
    wall = BudgetMeter(BudgetConfig(wall_hours=0.05 / 3600))
    wall.start_session()
    time.sleep(0.1)
    wall.tick()
    assert wall.spent() and "wall_hours" in wall.count.spent


def test_a_budget_changed_on_resume_takes_effect(tmp_path):
    """A resume with a raised budget (``--allow-change budget``) lifts the stored stop, in the folder the trials
    read at once; an unchanged or lowered budget stays spent; the parent says what the change lifted."""
    meter = BudgetMeter(BudgetConfig(gpu_hours=10 / 3600), locate(str(tmp_path)))
    meter.add_report("a", _report(1.0, 12.0))
    spent = meter.count.spent
    assert spent and json.loads((tmp_path / BUDGET_FILE).read_text())["spent"] == spent

    same = BudgetMeter.load(BudgetConfig(gpu_hours=10 / 3600), locate(str(tmp_path)))
    assert same.spent() and same.lifted is None
    assert BudgetMeter.load(BudgetConfig(gpu_hours=5 / 3600), locate(str(tmp_path))).spent()

    reasons: list[str] = []
    raised = BudgetMeter.load(BudgetConfig(gpu_hours=20 / 3600), locate(str(tmp_path)), on_spent=reasons.append)
    assert not raised.spent() and raised.lifted == spent
    assert json.loads((tmp_path / BUDGET_FILE).read_text())["spent"] is None  # workers start trials again
    assert raised.count.compute_seconds == 12.0  # the count goes on
    raised.add_report("b", _report(5.0, 7.0))
    assert not raised.spent() and reasons == []
    raised.add_report("b", _report(5.0, 9.0))  # 21 s of 20
    assert raised.spent() and reasons == [raised.count.spent] and "gpu_hours 0.00555556 spent" in reasons[0]

    lowered = BudgetMeter.load(BudgetConfig(wall_hours=1.0), locate(str(tmp_path)))  # gpu_hours removed: lifted
    assert lowered.lifted and not lowered.spent()
    tags: dict[str, str] = {}
    record_budget(lowered, lambda metrics: None, tags.update, echo=lambda line: None)
    assert tags[STOP_REASON_TAG].startswith("none: the budget changed on resume lifted the earlier stop (budget: ")


def test_unreadable_count_is_an_error(tmp_path):
    from sentsweep.errors import ConfigError

    (tmp_path / BUDGET_FILE).write_text("{not json")
    with pytest.raises(ConfigError, match="unreadable budget count"):
        BudgetMeter.load(BudgetConfig(), locate(str(tmp_path)))


DRIVER = """
import sys
import ray
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.sweep import run_sweep
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE

ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="WARNING")
config = SweepConfig.model_validate_json(open(sys.argv[1]).read())
run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False)
"""


def _count(sweep_dir: Path) -> dict:
    path = sweep_dir / BUDGET_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _attempt_seconds(client, run_id: str) -> float:
    """The compute a trial's worker reported to MLflow: the last ``attempt_seconds`` of each attempt. A point's
    logging time less its seconds is when its attempt began (to within the logging delay); a jump of more than 2 s
    in it starts a new attempt. (Not "the seconds went down": a resumed attempt's first report, after a model load,
    may come later in its attempt than the killed attempt's last one did.)"""
    history = sorted(client.get_metric_history(run_id, ATTEMPT_SECONDS_KEY), key=lambda m: (m.timestamp, m.step))
    total, last, began = 0.0, 0.0, None
    for point in history:
        start = point.timestamp / 1000 - point.value
        if began is not None and abs(start - began) > 2.0:  # a new attempt began
            total += last
        began, last = start, point.value
    return total + last


# About 2-3 min on a loaded 2-core machine (a driver of its own with its own Ray, then the resume).
@pytest.mark.slow
def test_budget_survives_sigkill_and_resume(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from mlflow import MlflowClient

    from sentsweep.platform.budget import SKIPPED_REASON, STOP_REASON_TAG
    from sentsweep.platform.sweep import resume_sweep
    from sentsweep.tracking.vocabulary import REASON_TAG, ROLE_TAG
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    budget_s = 40.0
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=16, scheduler={"type": "fifo"},
                        fixed={"max_steps": 8, "sleep_s": 0.5}, max_failures=1,
                        budget={"gpu_hours": budget_s / 3600}).resolved()
    (tmp_path / "config.json").write_text(config.model_dump_json())
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = repo_pythonpath()
    with (tmp_path / "driver.log").open("w") as log:
        driver = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "config.json")],
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:  # kill once a good part of the budget is counted
                assert driver.poll() is None, "the sweep ended before it could be killed: " + \
                    (tmp_path / "driver.log").read_text()[-2000:]
                found = list((tmp_path / "ray_results").glob("*/" + BUDGET_FILE))
                if found and _count(found[0].parent).get("compute_seconds", 0) >= 15:
                    break
                time.sleep(0.2)
            else:
                pytest.fail("the budget count did not grow in time")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=30)
    sweep_dir = found[0].parent
    before = _count(sweep_dir)
    assert before["spent"] is None and before["sessions"] == 1
    time.sleep(10)  # downtime: never counted

    started = time.monotonic()
    outcome = resume_sweep(str(sweep_dir), trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False,
                           echo=lambda line: None)
    resumed_for = time.monotonic() - started
    after = _count(sweep_dir)

    client = MlflowClient(tracking_uri=tracking_uri)
    trials = client.search_runs([outcome.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    reported = sum(_attempt_seconds(client, run.info.run_id) for run in trials)
    print(f"\nbudget {budget_s:.0f} s; counted before the kill {before['compute_seconds']:.1f} s, after the resume "
          f"{after['compute_seconds']:.1f} s; the workers reported {reported:.1f} s in all; driver wall "
          f"{before['wall_seconds']:.1f} s + {after['wall_seconds'] - before['wall_seconds']:.1f} s "
          f"(resume took {resumed_for:.1f} s, 10 s of downtime between)")
    assert after["sessions"] == 2 and after["spent"] and "gpu_hours" in after["spent"]
    assert after["compute_seconds"] >= budget_s > before["compute_seconds"]  # continued, not restarted
    # counted once: never more than the workers reported (a double count would add the first session's 15 s and
    # more), at most the reports the driver had not processed when it was killed less
    assert after["compute_seconds"] <= reported + 0.5
    assert after["compute_seconds"] >= reported - 8.0
    assert after["wall_seconds"] - before["wall_seconds"] <= resumed_for + 0.5  # the downtime is not in it
    parent = client.get_run(outcome.parent_run_id)
    assert parent.data.tags[STOP_REASON_TAG] == after["spent"]
    assert parent.data.metrics["budget_compute_seconds"] == pytest.approx(after["compute_seconds"])
    # no new trial after the budget was spent: fewer trials than asked for; every trial that trained finished
    assert len(outcome.results) < 16
    trained = [r for r in trials if r.data.tags.get(REASON_TAG) != SKIPPED_REASON]
    assert sorted({r.info.status for r in trained}) == ["FINISHED"]


@pytest.mark.slow  # two Tune runs of the toy: about a minute on a loaded 2-core machine
def test_a_budget_raised_on_resume_starts_the_trials_it_had_stopped(tmp_path, tiny_bert_dir, tracking_uri,
                                                                     ray_session):
    from mlflow import MlflowClient

    from sentsweep.platform.sweep import resume_sweep, run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=3, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 2, "eval_every": 2},
                        budget={"gpu_hours": 1e-9})
    first = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                      echo=lambda line: None)
    sweep_dir = Path(first.sweep_dir)
    assert first.counts["finished"] == 1 and len(first.results) < 3 and _count(sweep_dir)["spent"]

    outcome = resume_sweep(str(sweep_dir), overrides=["budget.gpu_hours=1.0", "stop_grace_s=5"],
                           allow_change=["budget", "stop_grace_s"], trainable=TOY_TRAINABLE, space=TOY_SPACE,
                           finalize=False, preflight=False, echo=lambda line: None)
    assert outcome.counts == {"finished": 3, "pruned": 0, "failed": 0}
    after = _count(sweep_dir)
    assert after["spent"] is None and after["sessions"] == 2
    manifest = locate(str(sweep_dir)).read_manifest()
    assert manifest.config["budget"]["gpu_hours"] == 1.0 and manifest.config["stop_grace_s"] == 5.0
    parent = MlflowClient(tracking_uri=tracking_uri).get_run(outcome.parent_run_id)
    from sentsweep.platform.budget import STOP_REASON_TAG

    assert parent.data.tags[STOP_REASON_TAG].startswith("none: the budget changed on resume lifted")
