"""The sweep budget as a Tune stopper: the trials' compute is Tune's ``time_total_s`` x the GPUs they hold, rebuilt
from what Tune restores (a resume continues it, downtime never counts), and a spent budget stops the sweep.

The counting is pure logic, tested here against fake trials and an injected clock; one real toy sweep shows a
budget stopping a sweep and a raised budget letting it go on after a resume."""

from __future__ import annotations

import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sentsweep.platform.config import BudgetConfig
from sentsweep.platform.driver.budget import (
    FINAL_EVALUATION_GRACE_S,
    BudgetStopper,
    SweepBudget,
    driving,
    record_budget,
)
from sentsweep.platform.stops import SPENT
from sentsweep.tracking.vocabulary import STOP_REASON_TAG, STOPPED_REASON
from sentsweep.trainables.method import GPUS_KEY
from sentsweep.trainables.report_keys import TOTAL_STEPS_KEY

HOUR = 3600.0


class Clock:
    """Seconds that move only when the test says so."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeTrial:
    """What the stopper reads of a Tune trial: its id, latest result and status."""

    trial_id: str
    last_result: dict[str, Any] = field(default_factory=dict)
    status: str = "RUNNING"


def _result(seconds: float, gpus: float | None = None) -> dict[str, Any]:
    return {"time_total_s": seconds, **({GPUS_KEY: gpus} if gpus is not None else {})}


def test_compute_is_each_trials_latest_time_total_times_the_gpus_it_holds() -> None:
    budget = SweepBudget(BudgetConfig(gpu_hours=1.0), clock=Clock())
    budget.see("a", _result(10.0, gpus=0.5))  # a half GPU counts half its seconds
    budget.see("b", _result(8.0))  # CPU only: its seconds
    budget.see("c", _result(4.0, gpus=2.0))
    budget.see("d", {})  # no report yet
    assert budget.figures()["budget_compute_seconds"] == 5.0 + 8.0 + 8.0
    budget.see("a", _result(30.0, gpus=0.5))  # the latest result replaces the one counted, it does not add to it
    assert budget.figures() == {"budget_compute_seconds": 31.0, "budget_gpu_seconds": 23.0,
                                "budget_trial_seconds": 42.0, "budget_wall_seconds": 0.0}


def test_a_resume_continues_from_the_restored_trials_and_never_counts_downtime() -> None:
    """A first driver runs 50 s, then dies; the sweep lies dead for hours; a second driver restores
    Tune's snapshot: the stopper copy Tune pickled, its callback state, the trials' last results."""
    first_clock = Clock(100.0)
    with driving("toy-1", SweepBudget(BudgetConfig(gpu_hours=1.0, wall_hours=1.0), clock=first_clock)) as first:
        stopper = BudgetStopper("toy-1")
        stopper.setup()
        stopper.on_step_begin(1, [FakeTrial("a"), FakeTrial("b")])
        assert stopper(trial_id="a", result=_result(10.0, gpus=1.0)) is False  # counted; stop_all decides
        stopper("a", _result(20.0, gpus=1.0))
        stopper("b", _result(5.0, gpus=1.0))
        first_clock.now = 150.0
        assert not stopper.stop_all()
        saved, snapshot = stopper.get_state(), pickle.dumps(stopper)
    assert first.figures()["budget_compute_seconds"] == 25.0 and first.wall_seconds == 50.0

    second_clock = Clock(90_000.0)  # a new process, hours later
    with driving("toy-1", SweepBudget(BudgetConfig(gpu_hours=1.0, wall_hours=1.0), clock=second_clock)) as second:
        restored = pickle.loads(snapshot)
        restored.set_state(saved)  # Tune restores the callback state before its loop begins
        restored.setup()
        # trial a restarts from the checkpoint it wrote at 15 s: Tune's time_total_s goes on from there
        trials = [FakeTrial("a", _result(20.0, gpus=1.0)), FakeTrial("b", _result(5.0, gpus=1.0))]
        restored.on_step_begin(1, trials)
        assert second.figures()["budget_compute_seconds"] == 25.0, "the restored trials' count, not zero"
        restored("a", _result(15.0 + 9.0, gpus=1.0))
        second_clock.now = 90_030.0
        assert not restored.stop_all()
    assert second.figures()["budget_compute_seconds"] == 24.0 + 5.0, \
        "Tune's figure for the trial: its redone seconds count once"
    assert second.wall_seconds == 50.0 + 30.0, "the downtime between the sessions is not counted"


def test_a_spent_budget_stops_all_and_says_why_once() -> None:
    lines: list[str] = []
    clock = Clock()
    with driving("toy-2", SweepBudget(BudgetConfig(gpu_hours=10 / HOUR), clock=clock, echo=lines.append)) as budget:
        stopper = BudgetStopper("toy-2")
        stopper.setup()
        stopper("a", _result(9.0, gpus=1.0))
        assert not stopper.stop_all()
        stopper("b", _result(1.5, gpus=1.0))
        assert stopper.stop_all() and stopper.stop_all()
        stopper("b", _result(0.0))  # a trial restarted from scratch: the stop stays
        assert stopper.stop_all()
    assert lines == [budget.spent]
    assert lines[0].startswith(f"{STOPPED_REASON}: gpu_hours 0.00277778 spent (0.002917 h counted)")

    wall_clock = Clock()
    walled = SweepBudget(BudgetConfig(wall_hours=0.5), clock=wall_clock, echo=lambda line: None)
    walled.start()
    wall_clock.now = 0.5 * HOUR - 1.0
    assert not walled.check()
    wall_clock.now = 0.5 * HOUR
    assert walled.check() and "wall_hours 0.5 spent" in str(walled.spent)


def _report(seconds: float, step: int, total: int = 8, **extra: Any) -> dict[str, Any]:
    return {**_result(seconds, gpus=1.0), "step": step, TOTAL_STEPS_KEY: total, **extra}


def test_a_trial_that_trained_its_last_step_finishes_its_final_evaluation_before_the_budget_stops_all() -> None:
    """Its test suite runs between its last evaluation and its final report: stopped there, it trained every step
    and could not win. The other trials stop at their next report, and the searcher starts no trial meanwhile."""
    clock = Clock()
    with driving("toy-4", SweepBudget(BudgetConfig(gpu_hours=10 / HOUR), clock=clock, echo=lambda line: None)) \
            as budget:
        stopper = BudgetStopper("toy-4")
        stopper.setup()
        assert stopper("done", _report(6.0, step=8)) is False  # its last evaluation
        assert stopper("mid", _report(5.0, step=4)) is False  # 11 s of 10: spent at the check
        assert not stopper.stop_all() and "toy-4" in SPENT  # "done" is in its final evaluation
        assert stopper("mid", _report(6.0, step=6)) is True  # stopped at its next report
        assert stopper("late", _report(1.0, step=8)) is False  # a last evaluation after the spend goes on too
        stopper.on_step_begin(0, [FakeTrial("done", _report(6.0, step=8)), FakeTrial("late", _report(1.0, step=8)),
                                  FakeTrial("errored", _report(1.0, step=8), status="ERROR")])
        assert budget.finishing == {"done", "late"}  # an ended trial waits for nothing
        assert stopper("done", _report(7.0, step=8, final=1.0)) is False  # its final report is taken
        assert not stopper.stop_all()
        assert stopper("late", _report(2.0, step=8, final=1.0)) is False
        assert stopper.stop_all()
    assert "toy-4" not in SPENT  # the driver's session is over

    with driving("toy-5", SweepBudget(BudgetConfig(gpu_hours=1 / HOUR), clock=clock, echo=lambda line: None)):
        stopper = BudgetStopper("toy-5")
        stopper.setup()
        stopper("stuck", _report(2.0, step=8))
        assert not stopper.stop_all()
        clock.now += FINAL_EVALUATION_GRACE_S  # a final evaluation that never ends does not hold the sweep
        assert stopper.stop_all()


def test_a_trial_the_budget_stopped_is_stopped_in_every_count_line_and_run() -> None:
    """The budget's stopper marks the report it stops a trial at; Tune then marks it ``done``, as it marks a
    scheduler's stop. A trial ``stop_all`` ended between reports has no ``done``. Both are ``stopped`` in the sweep's
    summary counts, its ``trials_*`` totals, the progress line and the trial's run; only the scheduler's is pruned."""
    from types import SimpleNamespace

    from sentsweep.platform.driver.callbacks import ProgressCallback
    from sentsweep.platform.results import FINAL_KEY
    from sentsweep.platform.tracking.trial_runs import result_outcome
    from sentsweep.platform.tracking.trial_runs_callback import completed_outcome, ended_outcome, sweep_totals

    clock = Clock()
    with driving("toy-7", SweepBudget(BudgetConfig(gpu_hours=10 / HOUR), clock=clock, echo=lambda line: None)):
        stopper = BudgetStopper("toy-7")
        stopper.setup()
        stopper("other", _report(11.0, step=2))
        assert stopper.stop_all() is True  # spent; "other" stops between reports, its report not done
        stopped = _report(1.0, step=2, training_iteration=1)
        assert stopper("budget", stopped) is True
        stopped["done"] = True  # what Tune adds to a report a stopper or a scheduler stops the trial at
    trials = [FakeTrial("budget", stopped, status="TERMINATED"),
              FakeTrial("other", _report(11.0, step=2, training_iteration=1, done=False), status="TERMINATED"),
              FakeTrial("asha", _report(3.0, step=2, training_iteration=1, done=True), status="TERMINATED"),
              FakeTrial("won", _report(9.0, step=8, training_iteration=4, done=True, **{FINAL_KEY: 1.0}),
                        status="TERMINATED")]
    assert completed_outcome(trials[0], "ASHA") == ("stopped", STOPPED_REASON)
    assert completed_outcome(trials[2], "ASHA") == ("pruned", "pruned by ASHA at iteration 1 (step 2)")
    assert result_outcome(stopped, "ASHA") == ("stopped", STOPPED_REASON)  # what sync reads from the folder
    assert ProgressCallback("stsb_dev", "max", 4).line(trials).endswith(
        "4/4 trials: 1 finished, 0 running, 1 pruned, 2 stopped, 0 failed")
    totals = sweep_totals(trials, 1.0)
    assert {k: totals.get(k) for k in ("trials_finished", "trials_pruned", "trials_stopped", "trials_failed")} == {
        "trials_finished": 1.0, "trials_pruned": 1.0, "trials_stopped": 2.0, "trials_failed": 0.0}
    assert ended_outcome(trials[1], "ASHA") == ("stopped", STOPPED_REASON)

    from sentsweep.platform.results import outcome_counts  # the summary line's and the webhook's counts

    results = [SimpleNamespace(metrics=t.last_result, error=None) for t in trials]
    assert outcome_counts(results) == {"finished": 1, "pruned": 1, "stopped": 2, "not started": 0, "failed": 0}


def test_a_trial_the_budget_never_started_is_not_started_in_every_count_line_and_run() -> None:
    """Tune ends a PENDING trial the spent budget never started with no report but its own filler: its run, the
    summary counts, the progress line and the ``trials_not_started`` total all say ``not started``. While the sweep
    runs, a PENDING trial is pending."""
    from types import SimpleNamespace

    from sentsweep.platform.driver.callbacks import ProgressCallback
    from sentsweep.platform.results import FINAL_KEY, outcome_counts
    from sentsweep.platform.tracking.trial_runs_callback import (
        completed_outcome,
        ended_outcome,
        sweep_totals,
        trial_outcome,
    )
    from sentsweep.tracking.vocabulary import NOT_STARTED_REASON

    waiting = FakeTrial("never", {"trial_id": "never"}, status="PENDING")
    won = FakeTrial("won", _report(9.0, step=8, training_iteration=4, done=True, **{FINAL_KEY: 1.0}),
                    status="TERMINATED")
    line = ProgressCallback("stsb_dev", "max", 2).line
    assert trial_outcome(waiting) == "pending" and sweep_totals([waiting, won], 1.0)["trials_not_started"] == 0.0
    assert line([waiting, won]).endswith("1/2 trials: 1 finished, 0 running, 0 pruned, 0 failed")
    assert completed_outcome(waiting, "ASHA") == ("not started", NOT_STARTED_REASON)  # Tune completes it
    assert line([waiting, won], ending=waiting).endswith(
        "2/2 trials: 1 finished, 0 running, 0 pruned, 1 not started, 0 failed")
    waiting.status = "TERMINATED"
    assert ended_outcome(waiting, "ASHA") == ("not started", NOT_STARTED_REASON)
    totals = sweep_totals([waiting, won], 1.0)
    assert {k: totals[k] for k in ("trials_finished", "trials_stopped", "trials_not_started", "trials_total")} == {
        "trials_finished": 1.0, "trials_stopped": 0.0, "trials_not_started": 1.0, "trials_total": 2.0}
    assert not [key for key in totals if " " in key], "every total is a plain MLflow key"
    results = [SimpleNamespace(metrics=t.last_result, error=None) for t in (waiting, won)]
    assert outcome_counts(results) == {"finished": 1, "pruned": 0, "stopped": 0, "not started": 1, "failed": 0}


def test_the_searcher_starts_no_trial_while_the_budget_is_spent() -> None:
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.search.searcher import build_searcher

    def space(trial: Any) -> None:
        trial.suggest_float("x", 0.0, 1.0)

    searcher = build_searcher(SweepConfig(name="toy-6", method="toy", metric="score"), space, [{"x": 0.5}],
                              study_name="toy-6")
    SPENT.add("toy-6")
    try:
        assert searcher.suggest("t0") is None  # Tune asks again later; the search is not over
    finally:
        SPENT.discard("toy-6")
    assert searcher.suggest("t0") == {"x": 0.5}


def test_record_budget_tags_the_stop_notifies_it_and_says_when_a_resume_lifted_it() -> None:
    def record(budget: SweepBudget) -> tuple[dict[str, float], dict[str, str], list[str]]:
        metrics: dict[str, float] = {}
        tags: dict[str, str] = {}
        sent: list[str] = []
        record_budget(budget, metrics.update, tags.update, sent.append)
        return metrics, tags, sent

    earlier = {"wall_seconds": 40.0, "stopped": f"{STOPPED_REASON}: gpu_hours 0.00277778 spent"}
    for hours, spent in ((20 / HOUR, False), (5 / HOUR, True)):  # raised, then lowered on resume
        budget = SweepBudget(BudgetConfig(gpu_hours=hours), clock=Clock(), echo=lambda line: None)
        budget.restore(earlier)
        budget.start()
        budget.see("a", _result(12.0, gpus=1.0))
        assert budget.check() is spent
        metrics, tags, sent = record(budget)
        assert metrics["budget_compute_seconds"] == 12.0 and metrics["budget_wall_seconds"] == 40.0
        if spent:
            assert tags == {STOP_REASON_TAG: budget.spent} and sent == [budget.spent]
            assert budget.state()["stopped"] == budget.spent
        else:
            assert tags[STOP_REASON_TAG] == f"none: the budget changed on resume lifted the earlier stop " \
                                            f"({earlier['stopped']})"
            assert sent == [] and budget.state()["stopped"] == earlier["stopped"]
    # Tune's loop did not run in this session (the search was over): nothing is recorded again
    assert record(SweepBudget(BudgetConfig(gpu_hours=1.0))) == ({}, {}, [])


def test_the_stopper_pickles_to_its_name_and_is_inert_without_a_driver() -> None:
    stopper = BudgetStopper("toy-3")
    with driving("toy-3", SweepBudget(BudgetConfig(gpu_hours=1.0), echo=lambda line: None)):
        stopper("a", _result(1.0))
        assert vars(pickle.loads(pickle.dumps(stopper))) == {"sweep_name": "toy-3"}  # no count, no limits
    stopper("a", _result(9e9))
    assert stopper.stop_all() is False and stopper.get_state() is None


def _spent_at_the_first_report(tmp_path: Path, model: Path, tracking_uri: str, *, steps: int, samples: int) -> Any:
    """A toy sweep, one trial at a time, of ``steps`` steps evaluated every 2, whose budget is spent at its first
    report; the sweep's outcome and an MLflow client. The stop is said once and tagged on the sweep's run."""
    from mlflow import MlflowClient

    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, model, tracking_uri, num_samples=samples, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": steps, "eval_every": 2},
                        budget={"gpu_hours": 1e-9})
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                        echo=lines.append)
    stops = [line for line in lines if line.startswith(STOPPED_REASON)]
    assert len(stops) == 1 and "gpu_hours 1e-09 spent" in stops[0]
    client = MlflowClient(tracking_uri=tracking_uri)
    tag = client.get_run(outcome.parent_run_id).data.tags[STOP_REASON_TAG]
    assert tag.startswith(f"{STOPPED_REASON}: gpu_hours 1e-09 spent")
    return outcome, client


# About a minute on a loaded 2-core machine: a sweep of the toy, then its resume.
@pytest.mark.slow
def test_a_spent_budget_stops_the_sweep_and_a_raised_one_lets_it_go_on(tmp_path, tiny_bert_dir, tracking_uri,
                                                                      ray_session):
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.tracking.vocabulary import REASON_TAG, ROLE_TAG
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE

    # spent at the first trial's first report (step 2 of 4): no trial starts after it, and it is stopped where it is
    first, client = _spent_at_the_first_report(tmp_path, tiny_bert_dir, tracking_uri, steps=4, samples=3)
    assert first.counts == {"finished": 0, "pruned": 0, "stopped": 1, "not started": 0, "failed": 0}
    parent = client.get_run(first.parent_run_id)
    counted = sum(result.metrics["time_total_s"] for result in first.results)
    assert parent.data.metrics["budget_compute_seconds"] == pytest.approx(counted)
    assert (parent.data.metrics["trials_stopped"], parent.data.metrics["trials_pruned"]) == (1.0, 0.0)
    before_wall = parent.data.metrics["budget_wall_seconds"]
    (stopped,) = client.search_runs([first.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    assert (stopped.info.status, stopped.data.tags[REASON_TAG]) == ("FINISHED", STOPPED_REASON)
    assert stopped.data.tags["sentsweep.outcome"] == "stopped"

    started = time.monotonic()
    outcome = resume_sweep(first.sweep_dir, overrides=["budget.gpu_hours=1.0"], allow_change=["budget"],
                           trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                           echo=lambda line: None)
    resumed_for = time.monotonic() - started
    # the stopped trial stays as it ended; the search goes on to its number of samples
    assert outcome.counts == {"finished": 2, "pruned": 0, "stopped": 1, "not started": 0, "failed": 0}
    parent = client.get_run(outcome.parent_run_id)
    assert parent.data.tags[STOP_REASON_TAG].startswith("none: the budget changed on resume lifted the earlier stop")
    counted_after = sum(result.metrics["time_total_s"] for result in outcome.results)
    assert parent.data.metrics["budget_compute_seconds"] == pytest.approx(counted_after) and counted_after > counted
    assert before_wall < parent.data.metrics["budget_wall_seconds"] <= before_wall + resumed_for  # no downtime
    assert not list(Path(first.sweep_dir).glob("budget*")), "the count is Tune's own state, in no file of ours"


# About half a minute on a loaded 2-core machine.
@pytest.mark.slow
def test_a_trial_that_trained_its_last_step_when_the_budget_is_spent_ends_finished_and_none_starts_after(
        tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    """A trial whose first report is its last evaluation (2 steps, evaluated every 2): the budget is spent there, the
    trial still evaluates its test suite and ends finished, and the next trial never starts."""
    from sentsweep.tracking.vocabulary import ROLE_TAG

    outcome, client = _spent_at_the_first_report(tmp_path, tiny_bert_dir, tracking_uri, steps=2, samples=2)
    assert outcome.counts == {"finished": 1, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    assert len(outcome.results) == 1, "no trial starts once the budget is spent"
    (run,) = client.search_runs([outcome.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    assert run.data.tags["sentsweep.outcome"] == "finished" and "stsb_test" in run.data.metrics  # its test suite ran
