"""Trials' runs written from their folder: the high-water mark, no duplicates, no RUNNING run left, the back-off.

Real MLflow (a sqlite store in process) for the runs; the deliverer's back-off on an injected clock.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.results import DRAINING_KEY
from sentsweep.platform.tracking.run_writes import Backoff, Deliverer
from sentsweep.platform.tracking.trial_runs import TrialFolder, TrialRuns, reconcile, trial_folders
from sentsweep.tracking.vocabulary import (
    ATTEMPT_TAG,
    OUTCOME_TAG,
    PARENT_TAG,
    REASON_TAG,
    ROLE_TAG,
    RUN_RECORD_KEY,
    SWEEP_TAG,
    TRIAL_ID_TAG,
    TRIAL_NUMBER_TAG,
    run_outcome,
)


def write_trial(experiment: Path, trial_id: str, results: list[dict[str, Any]], output: bool = False) -> Path:
    """A Tune trial folder: ``result.json`` with one line per report (and ``output/`` when ``output``)."""
    folder = experiment / f"train_toy_{trial_id}"
    folder.mkdir(parents=True)
    (folder / "params.json").write_text("{}")
    lines = [json.dumps({"trial_id": trial_id, "training_iteration": i + 1, **r}) for i, r in enumerate(results)]
    (folder / "result.json").write_text("".join(line + "\n" for line in lines))
    if output:
        (folder / "output").mkdir()
        (folder / "output" / "final_metrics.json").write_text('{"stsb_dev": 0.8}')
    return folder


@pytest.fixture
def sweep(tracking_uri: str) -> tuple[MlflowClient, str, str]:
    client = MlflowClient(tracking_uri)
    experiment_id = client.create_experiment("runs")
    parent = client.create_run(experiment_id, run_name="sweep").info.run_id
    return client, experiment_id, parent


def points(client: MlflowClient, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def children(client: MlflowClient, experiment_id: str) -> list[Any]:
    return [r for r in client.search_runs([experiment_id]) if TRIAL_ID_TAG in r.data.tags]


class LosesAnswers:
    """A client whose ``log_batch`` reaches the server and then raises: an answer lost in an outage."""

    def __init__(self, client: MlflowClient, fail_on: set[int]) -> None:
        self.client, self.fail_on, self.calls = client, fail_on, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def log_batch(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1
        self.client.log_batch(*args, **kwargs)
        if self.calls in self.fail_on:
            raise ConnectionError("answer lost")


def test_reports_above_the_mark_only_and_none_twice_after_a_lost_answer(sweep, tmp_path: Path) -> None:
    client, experiment_id, parent = sweep
    reports = [{"step": 10 * (i + 1), "stsb_dev": 0.1 * i} for i in range(4)]
    folder = TrialFolder(pyarrow.fs.LocalFileSystem(), str(write_trial(tmp_path, "t1", reports)), "t1")
    flaky = LosesAnswers(client, fail_on={2})
    runs = TrialRuns(flaky, experiment_id, parent, "toy", now_ms=lambda: 1000)  # one timestamp: exact duplicates
    runs.run_id("t1")
    with pytest.raises(ConnectionError):
        runs.deliver("t1", folder.results())
    runs.forget("t1")  # what a failed delivery does: the mark is read back from MLflow
    runs.run_id("t1")
    assert runs.marks["t1"] == 20  # the second report reached the server although its answer was lost
    assert runs.deliver("t1", folder.results()) == 2
    run_id = runs.run_ids["t1"]
    assert points(client, run_id, "stsb_dev") == [(10, 0.0), (20, 0.1), (30, 0.2), (40, pytest.approx(0.3))]
    assert runs.deliver("t1", folder.results()) == 0


def test_reconcile_completes_histories_ends_runs_and_is_idempotent(sweep, tmp_path: Path) -> None:
    client, experiment_id, parent = sweep
    record = {"tags": {"node_ip": "10.0.0.1"}, "params": {"lr": 0.001, "pooling": "mean"},
              "protocols": {"stsb_dev": {"compact": "spearman x100", "full": {"measure": "spearman"}}}}
    finished = [{"step": 5, "stsb_dev": 0.5, RUN_RECORD_KEY: record}, {"step": 10, "stsb_dev": 0.7, "final": 1.0}]
    write_trial(tmp_path, "done", finished, output=True)
    write_trial(tmp_path, "cut", [{"step": 5, "stsb_dev": 0.2}])
    write_trial(tmp_path, "bad", [{"step": 0, "failed": 1.0, "failure_reason": "DataError: no rows"}])
    runs = TrialRuns(client, experiment_id, parent, "toy")
    runs.run_id("cut")
    runs.deliver("cut", [{"training_iteration": 1, "step": 5, "stsb_dev": 0.2}])  # delivered live, before the end
    fs = pyarrow.fs.LocalFileSystem()

    first = reconcile(fs, str(tmp_path), TrialRuns(client, experiment_id, parent, "toy"))
    assert (first.trials, first.reports, first.ended) == (3, 2, 3)  # a failure's report carries no figure
    again = reconcile(fs, str(tmp_path), TrialRuns(client, experiment_id, parent, "toy"))
    assert (again.reports, again.ended) == (0, 0)

    runs_by_trial = {r.data.tags[TRIAL_ID_TAG]: r for r in children(client, experiment_id)}
    assert Counter(r.data.tags[TRIAL_ID_TAG] for r in children(client, experiment_id)) == {"done": 1, "cut": 1,
                                                                                          "bad": 1}
    assert {t: r.info.status for t, r in runs_by_trial.items()} == {"done": "FINISHED", "cut": "KILLED",
                                                                   "bad": "FAILED"}
    done = runs_by_trial["done"]
    assert points(client, done.info.run_id, "stsb_dev") == [(5, 0.5), (10, 0.7)]
    assert done.data.params == {"lr": "0.001", "pooling": "mean"}
    assert done.data.tags["node_ip"] == "10.0.0.1"
    assert done.data.tags["sentsweep.protocol.stsb_dev"] == "spearman x100"
    assert {a.path for a in client.list_artifacts(done.info.run_id)} == {"final_metrics.json", "protocols.json"}
    assert points(client, runs_by_trial["cut"].info.run_id, "stsb_dev") == [(5, 0.2)]
    assert runs_by_trial["bad"].data.tags[REASON_TAG] == "DataError: no rows"
    assert "failed" not in runs_by_trial["bad"].data.metrics
    assert {t: r.data.tags[OUTCOME_TAG] for t, r in runs_by_trial.items()} == {
        "done": "finished", "cut": "interrupted", "bad": "failed"}
    assert {t: run_outcome(r) for t, r in runs_by_trial.items()} == {
        "done": "finished", "cut": "interrupted", "bad": "failed"}
    assert runs_by_trial["bad"].data.tags["mlflow.note.content"] == "**Failed**: DataError: no rows."


def test_bookkeeping_goes_under_sys_and_figures_stay_as_they_are(sweep) -> None:
    client, experiment_id, parent = sweep
    runs = TrialRuns(client, experiment_id, parent)
    run_id = runs.run_id("t1", name="t01 lr=0.001", number=1)
    runs.deliver("t1", [{"training_iteration": 1, "step": 8, "epoch": 0.5, "gpus": 0.0, "wall_seconds": 3.0,
                         "stsb_dev": 70.0, "train_loss": 1.5, "time_this_iter_s": 2.0}])
    run = client.get_run(run_id)
    assert set(run.data.metrics) == {"stsb_dev", "train_loss", "system/step", "system/epoch", "system/gpus",
                                     "system/wall_seconds", "system/training_iteration"}
    assert run.info.run_name == "t01 lr=0.001" and run.data.tags[TRIAL_NUMBER_TAG] == "1"
    assert points(client, run_id, "stsb_dev") == [(8, 70.0)]


def test_a_run_logged_before_bookkeeping_moved_keeps_its_mark(sweep) -> None:
    """A run whose iterations were logged under their own key (an older sweep resumed) keeps its mark: nothing is
    logged twice."""
    client, experiment_id, parent = sweep
    runs = TrialRuns(client, experiment_id, parent)
    run_id = runs.run_id("t1")
    client.log_metric(run_id, "training_iteration", 1, step=10)
    client.log_metric(run_id, "loss", 2.0, step=10)
    again = TrialRuns(client, experiment_id, parent)
    again.run_id("t1", name="t01")
    assert again.deliver("t1", [{"training_iteration": 1, "step": 10, "loss": 2.0},
                                {"training_iteration": 2, "step": 20, "loss": 1.0}]) == 1
    assert points(client, run_id, "loss") == [(10, 2.0), (20, 1.0)]
    assert client.get_run(run_id).info.run_name == "t01", "a run named by its id gets the trial's name"


def test_a_resumed_trial_reattaches_to_its_run_and_continues_above_its_mark(sweep, tmp_path: Path) -> None:
    client, experiment_id, parent = sweep
    write_trial(tmp_path, "t1", [{"step": 5, "loss": 1.0}, {"step": 10, "loss": 0.5}])
    reconcile(pyarrow.fs.LocalFileSystem(), str(tmp_path), TrialRuns(client, experiment_id, parent))
    runs = TrialRuns(client, experiment_id, parent)  # a resumed driver: Tune starts the trial again
    run_id = runs.run_id("t1", new_attempt=True)
    run = client.get_run(run_id)
    assert run.info.status == "RUNNING" and runs.marks["t1"] == 10 and run.data.tags[ATTEMPT_TAG] == "2"
    runs.deliver("t1", [{"training_iteration": i, "step": 5 * i, "loss": 1.0 / i} for i in (1, 2, 3)])
    assert points(client, run_id, "loss") == [(5, 1.0), (10, 0.5), (15, pytest.approx(1 / 3))]
    assert len(children(client, experiment_id)) == 1


def test_steps_trained_again_after_a_fallback_are_not_logged_twice_and_the_final_report_is(sweep,
                                                                                          tmp_path: Path) -> None:
    """A retry restored from an earlier checkpoint reports steps the run holds (Tune's iteration goes on): they are
    not logged again; the final report, at the last evaluation's step, is logged once."""
    client, experiment_id, parent = sweep
    reports = [{"step": 0, "loss": 3.0}, {"step": 2, "loss": 2.0}, {"step": 4, "loss": 1.0},
               {"step": 4, "loss": 1.5}, {"step": 6, "loss": 0.5}, {"step": 6, "loss": 0.5, "final": 1.0}]
    write_trial(tmp_path, "t1", reports)
    fs = pyarrow.fs.LocalFileSystem()
    assert reconcile(fs, str(tmp_path), TrialRuns(client, experiment_id, parent)).reports == 5
    assert reconcile(fs, str(tmp_path), TrialRuns(client, experiment_id, parent)).reports == 0
    (run,) = children(client, experiment_id)
    assert points(client, run.info.run_id, "loss") == [(0, 3.0), (2, 2.0), (4, 1.0), (6, 0.5), (6, 0.5)]
    assert run.data.metrics["system/final"] == 1.0 and run.info.status == "FINISHED"
    assert "final" not in run.data.metrics, "bookkeeping is charted apart, under system/"


def test_draining_reports_are_skipped_and_folders_without_reports_ignored(sweep, tmp_path: Path) -> None:
    client, experiment_id, parent = sweep
    write_trial(tmp_path, "t1", [{"step": 5, "loss": 1.0}, {"step": 7, "loss": 9.0, DRAINING_KEY: 1.0}])
    (tmp_path / "not_a_trial").mkdir()
    folders = list(trial_folders(pyarrow.fs.LocalFileSystem(), str(tmp_path)))
    assert [f.trial_id for f, _ in folders] == ["t1"]
    assert folders[0][1] == folders[0][0].results(), "the reports read while finding the trial are handed on"
    runs = TrialRuns(client, experiment_id, parent)
    runs.run_id("t1")
    runs.deliver("t1", folders[0][1])
    assert points(client, runs.run_ids["t1"], "loss") == [(5, 1.0)]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_to_its_cap_and_ends_at_a_success() -> None:
    clock = Clock()
    backoff = Backoff(first_s=5, max_s=20, clock=clock)
    assert backoff.allows()
    assert [backoff.failed() for _ in range(4)] == [5, 10, 20, 20]
    assert not backoff.allows()
    clock.now = 19.9
    assert not backoff.allows()
    clock.now = 20.0
    assert backoff.allows()
    backoff.failed()
    backoff.succeeded()
    assert backoff.allows() and backoff.failures == 0


def test_deliverer_drops_jobs_while_backed_off_and_reports_their_keys() -> None:
    clock, behind, ran = Clock(), [], []
    deliverer = Deliverer(on_failure=behind.append, backoff=Backoff(first_s=5, clock=clock), capacity=1)

    def down() -> None:
        raise ConnectionError("refused")

    assert not deliverer.run_one("t1", down)
    assert behind == ["t1"]
    assert not deliverer.submit("t2", lambda: ran.append("t2"))  # backed off: dropped, never queued
    assert behind == ["t1", "t2"] and deliverer._thread is None
    assert deliverer.run_one("t3", lambda: ran.append("t3"), force=True)  # the end of a sweep tries anyway
    clock.now = 5.0
    assert deliverer.run_one("t2", lambda: ran.append("t2"))
    assert ran == ["t3", "t2"]


def test_deliverer_drops_jobs_beyond_its_capacity_without_waiting() -> None:
    behind: list[str] = []
    deliverer = Deliverer(on_failure=behind.append, capacity=1)
    deliverer._thread = object()  # type: ignore[assignment]  # no thread takes jobs: the queue stays full
    assert deliverer.submit("a", lambda: None)
    assert not deliverer.submit("b", lambda: None)
    assert behind == ["b"]
    assert not deliverer.drain(0.05)  # gives up on its deadline


def test_reconcile_ends_a_pruned_trial_as_pruned_and_names_runs_as_the_driver_would(sweep, tmp_path: Path) -> None:
    """A trial whose last report Tune marked ``done`` without a final report was pruned: FINISHED, outcome pruned,
    with the reason the driver gives. Runs get the driver's names and numbers, also runs an earlier sync named by
    their Tune id; a finished run loses the reason of the interruption it recovered from."""
    client, experiment_id, parent = sweep
    write_trial(tmp_path, "low", [{"step": 8, "stsb_dev": 0.3, "done": True}])
    write_trial(tmp_path, "cut", [{"step": 8, "stsb_dev": 0.6}])
    write_trial(tmp_path, "best", [{"step": 8, "stsb_dev": 0.7}, {"step": 16, "stsb_dev": 0.8, "final": 1.0}])
    fs = pyarrow.fs.LocalFileSystem()
    reconcile(fs, str(tmp_path), TrialRuns(client, experiment_id, parent))  # an older sync: ids as names
    runs = TrialRuns(client, experiment_id, parent)
    runs.run_id("best")
    runs.end("best", "interrupted", "interrupted with the sweep")
    client.update_run(runs.run_ids["best"], status="RUNNING")
    names = {"low": ("t02 lr=0.001", 2), "cut": ("t03 lr=0.01", 3), "best": ("t01 lr=0.0001", 1)}

    reconcile(fs, str(tmp_path), TrialRuns(client, experiment_id, parent), names=names, scheduler_label="ASHA")

    by_trial = {r.data.tags[TRIAL_ID_TAG]: r for r in children(client, experiment_id)}
    assert {t: r.info.run_name for t, r in by_trial.items()} == {t: n for t, (n, _) in names.items()}
    assert {t: r.data.tags[TRIAL_NUMBER_TAG] for t, r in by_trial.items()} == {"low": "2", "cut": "3", "best": "1"}
    low = by_trial["low"]
    assert (low.info.status, low.data.tags[OUTCOME_TAG]) == ("FINISHED", "pruned")
    assert low.data.tags[REASON_TAG] == "pruned by ASHA at iteration 1 (step 8)"
    assert (by_trial["cut"].info.status, by_trial["cut"].data.tags[OUTCOME_TAG]) == ("KILLED", "interrupted")
    best = by_trial["best"]
    assert (best.info.status, best.data.tags[OUTCOME_TAG]) == ("FINISHED", "finished")
    assert REASON_TAG not in best.data.tags


def test_sync_links_the_sweep_run_to_its_best_trials_run_once(sweep) -> None:
    """The sweep's end names its best trial while MLflow is down; its run exists only once sync made it."""
    from sentsweep.platform.driver.sync import link_best_run
    from sentsweep.tracking.vocabulary import BEST_RUN_TAG, BEST_TRIAL_TAG

    client, experiment_id, parent = sweep
    stage = client.create_run(experiment_id, run_name="confirmation").info.run_id
    runs = TrialRuns(client, experiment_id, stage)
    best = runs.run_id("seed2")
    link_best_run(client, experiment_id, parent, [parent, stage])
    assert BEST_RUN_TAG not in client.get_run(parent).data.tags  # no best trial named yet
    client.set_tag(parent, BEST_TRIAL_TAG, "seed2")
    link_best_run(client, experiment_id, parent, [parent, stage])
    assert client.get_run(parent).data.tags[BEST_RUN_TAG] == best
    client.set_tag(parent, BEST_RUN_TAG, "kept")
    link_best_run(client, experiment_id, parent, [parent, stage])
    assert client.get_run(parent).data.tags[BEST_RUN_TAG] == "kept"  # a link the sweep made stays


def test_a_retried_attempt_moves_the_runs_placement_even_at_a_step_already_logged(sweep) -> None:
    """A trial retried on another node from an older checkpoint first reports a step its first attempt logged: its
    figures are not logged twice, but its run names the node it runs on now."""
    client, experiment_id, parent = sweep
    runs = TrialRuns(client, experiment_id, parent)
    run_id = runs.run_id("moved")
    first = {"training_iteration": 1, "step": 4, "stsb_dev": 0.4, RUN_RECORD_KEY: {"tags": {"node_id": "lost"}}}
    retried = {"training_iteration": 1, "step": 4, "stsb_dev": 0.41, RUN_RECORD_KEY: {"tags": {"node_id": "other"}}}
    assert runs.deliver("moved", [first]) == 1
    assert runs.deliver("moved", [retried]) == 0
    assert client.get_run(run_id).data.tags["node_id"] == "other"
    assert points(client, run_id, "stsb_dev") == [(4, 0.4)]


def test_a_fallback_note_in_the_folder_tags_the_run_also_below_the_mark(sweep, tmp_path: Path) -> None:
    """A trial that resumed from an older checkpoint reports steps its run already holds; its note still tags the
    run, live or rebuilt by a sync from the folder, and a newer note on the run is kept."""
    from sentsweep.trainables.restore_note import RESTORE_REASON_KEY, RESTORED_AT_TAG, RESTORED_FROM_KEY

    client, experiment_id, parent = sweep
    note = {RESTORED_FROM_KEY: "checkpoint 10", RESTORE_REASON_KEY: "checkpoint_000002 is gone"}
    reports = [{"step": 10, "stsb_dev": 0.5, "timestamp": 100}, {"step": 20, "stsb_dev": 0.6, "timestamp": 110},
               {"step": 20, "stsb_dev": 0.61, "timestamp": 130, **note}]
    write_trial(tmp_path, "t1", reports)
    runs = TrialRuns(client, experiment_id, parent, "toy")
    runs.run_id("t1")
    assert runs.deliver("t1", reports[:2]) == 2
    assert runs.deliver("t1", reports[2:]) == 0  # step 20 is held: no second point
    run_id = runs.run_ids["t1"]
    tags = client.get_run(run_id).data.tags
    assert (tags[RESTORED_FROM_KEY], tags[RESTORE_REASON_KEY], tags[RESTORED_AT_TAG]) == (
        "checkpoint 10", "checkpoint_000002 is gone", "130")
    client.delete_tag(run_id, RESTORED_FROM_KEY)  # lost, as in an outage: a sync finds it again
    client.delete_tag(run_id, RESTORED_AT_TAG)
    reconcile(pyarrow.fs.LocalFileSystem(), str(tmp_path), TrialRuns(client, experiment_id, parent, "toy"))
    assert client.get_run(run_id).data.tags[RESTORED_FROM_KEY] == "checkpoint 10"
    assert runs.tag_note(run_id, ("scratch", "ActorDiedError: the node was lost", 140))  # a later retry
    reconcile(pyarrow.fs.LocalFileSystem(), str(tmp_path), TrialRuns(client, experiment_id, parent, "toy"))
    assert client.get_run(run_id).data.tags[RESTORED_FROM_KEY] == "scratch"  # the folder's older note does not win
    assert not runs.tag_note(run_id, ("checkpoint 10", "older", 120))


def test_a_reports_record_cannot_move_its_run_to_another_sweep(sweep, tmp_path: Path) -> None:
    """A record read from a folder anyone may have written, whose tags name another sweep's run as the parent (or
    another trial): the run stays the trial's, under its own sweep, and its placement is still tagged."""
    client, experiment_id, parent = sweep
    other = client.create_run(experiment_id, run_name="another-sweep").info.run_id
    record = {"tags": {PARENT_TAG: other, TRIAL_ID_TAG: "theirs", ROLE_TAG: "sweep", SWEEP_TAG: "theirs",
                       "node_id": "n1"}}
    write_trial(tmp_path, "t1", [{"step": 1, "stsb_dev": 0.5, RUN_RECORD_KEY: record}])
    runs = TrialRuns(client, experiment_id, parent, "toy")
    reconcile(pyarrow.fs.LocalFileSystem(), str(tmp_path), runs)
    tags = client.get_run(runs.run_ids["t1"]).data.tags
    assert (tags[PARENT_TAG], tags[TRIAL_ID_TAG], tags[ROLE_TAG], tags[SWEEP_TAG]) == (parent, "t1", "trial", "toy")
    assert tags["node_id"] == "n1"


def test_a_reports_record_whose_tags_are_no_mapping_is_delivered_without_them(sweep, tmp_path: Path) -> None:
    """A record from a folder anyone may have written, whose ``tags`` is a list: the report's metrics arrive and
    ``sync`` completes, instead of failing at every try."""
    client, experiment_id, parent = sweep
    write_trial(tmp_path, "t1", [{"step": 1, "stsb_dev": 0.5, RUN_RECORD_KEY: {"tags": ["node_id", "n1"]}}])
    runs = TrialRuns(client, experiment_id, parent, "toy")
    reconcile(pyarrow.fs.LocalFileSystem(), str(tmp_path), runs)
    run = client.get_run(runs.run_ids["t1"])
    assert run.data.metrics["stsb_dev"] == 0.5 and "node_id" not in run.data.tags
