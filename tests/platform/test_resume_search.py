"""A resumed search agrees with the trials Tune restores (sentsweep.platform.driver.resume): the study is read
from
its journal, which is never behind, and Tune's snapshot files may come from different saves (a driver lost while
Tune wrote or uploaded them). Each sample runs once, no Tune trial gets a second Optuna trial, none stays RUNNING."""

from __future__ import annotations

import json
import pickle
from collections import Counter
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient
from mlflow.entities import ViewType
from optuna.trial import TrialState
from ray.tune.search import ConcurrencyLimiter, SearchGenerator

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.resume import ResizableSearchGenerator
from sentsweep.platform.search.searcher import LOST_REASON, TUNE_TRIAL_ATTR, PruningAwareOptunaSearch, build_searcher
from sentsweep.platform.search.study_store import StudyStore, load_study
from sentsweep.tracking.vocabulary import ROLE_TAG, TRIAL_ID_TAG
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, interrupted_sweep, toy_config

FINAL = {"stsb_dev": 40.0, "training_iteration": 2, "final": 1.0}


class Sweep:
    """A sweep's search as Tune holds it, over a journal in ``folder``: the searcher as the Tuner pickled it when the
    sweep began, the chain around it, what Tune's snapshot saves, and a resume from there (no Ray needed)."""

    def __init__(self, folder: Path, num_samples: int = 4, max_concurrent: int = 2,
                 first: list[dict] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.num_samples, self.max_concurrent = folder, num_samples, max_concurrent
        config = SweepConfig(name="t", method="toy", search_space="toy", metric="stsb_dev", mode="max", seed=3,
                             num_samples=num_samples)
        searcher = build_searcher(config, TOY_SPACE.define_by_run, first or [], store=StudyStore(str(folder)),
                                  study_name="t")
        self.pickled = pickle.dumps(searcher)  # tuner.pkl
        self.generator = self._chain(searcher)

    def _chain(self, searcher: PruningAwareOptunaSearch) -> ResizableSearchGenerator:
        return ResizableSearchGenerator(ConcurrencyLimiter(searcher, max_concurrent=self.max_concurrent),
                                        self.num_samples, False, (pyarrow.fs.LocalFileSystem(), str(self.folder)))

    @property
    def searcher(self) -> PruningAwareOptunaSearch:
        return self.generator.searcher.searcher

    def start(self, *trial_ids: str) -> dict[str, dict]:
        """Suggest ``trial_ids`` as Tune's generator does (through the limiter, each counted); their configs."""
        configs = {trial_id: self.generator.searcher.suggest(trial_id) for trial_id in trial_ids}
        state = self.generator.get_state()
        SearchGenerator.set_state(self.generator, {**state, "counter": state["counter"] + len(trial_ids)})
        return configs

    def save_search(self, stamp: str = "2026-11-24_10-00-00", finished: bool = False) -> None:
        """Tune's search files of a snapshot (the generator, the limiter, the searcher)."""
        if finished:
            SearchGenerator.set_state(self.generator, {**self.generator.get_state(), "finished": True})
        self.generator.save_to_dir(str(self.folder), stamp)

    def save_trials(self, trials: dict[str, str], stamp: str = "2026-11-24_10-00-00") -> None:
        """Tune's experiment state of a snapshot: ``trials`` (id -> status), as Tune writes its trial data."""
        data = [[json.dumps({"trial_id": t, "status": s, "config": {}}),
                 json.dumps({"last_result": FINAL if s == "TERMINATED" else {}})] for t, s in trials.items()]
        (self.folder / f"experiment_state-{stamp}.json").write_text(json.dumps({"trial_data": data}))

    def resume(self, staging: Path | None = None) -> ResizableSearchGenerator:
        """The chain a resume builds around the searcher of ``tuner.pkl``, restored as Tune restores it."""
        self.generator = self._chain(pickle.loads(self.pickled))
        self.generator.restore_from_dir(str(staging or self.folder))
        return self.generator

    def optuna_trials(self) -> dict[str, TrialState]:
        """Each Tune trial's Optuna trial state; a Tune trial with two Optuna trials fails here."""
        trials = self.searcher.study.trials
        named = Counter(t.user_attrs.get(TUNE_TRIAL_ATTR) for t in trials)
        assert all(n == 1 for n in named.values()), named
        return {t.user_attrs.get(TUNE_TRIAL_ATTR): t.state for t in trials}


def test_a_trial_the_snapshot_lacks_is_failed_and_its_slot_freed(tmp_path) -> None:
    sweep = Sweep(tmp_path)
    sweep.start("a", "b")
    sweep.generator.searcher.on_trial_complete("a", FINAL)  # through the limiter, as Tune tells it
    sweep.start("c")
    sweep.save_search()  # the search saved after "c" started
    sweep.save_trials({"a": "TERMINATED", "b": "RUNNING"})  # the trials of a save before it
    generator = sweep.resume()
    assert generator.get_state()["counter"] == 2 and generator.searcher.live_trials == {"b"}
    assert generator.searcher.num_unfinished_live_trials == 1
    assert sweep.optuna_trials() == {"a": TrialState.COMPLETE, "b": TrialState.RUNNING, "c": TrialState.FAIL}
    assert sweep.searcher.study.trials[2].user_attrs["fail_reason"] == LOST_REASON
    sweep.searcher.on_trial_result("b", {"stsb_dev": 41.0, "training_iteration": 1})  # b's results reach Optuna
    sweep.searcher.on_trial_complete("b", FINAL)
    sweep.start("d")  # the sample "c" was: a new trial, a new Optuna trial
    assert sweep.optuna_trials() == {"a": TrialState.COMPLETE, "b": TrialState.COMPLETE, "c": TrialState.FAIL,
                                     "d": TrialState.RUNNING}
    assert sweep.searcher.study.trials[1].intermediate_values == {1: 41.0}


def test_a_trial_newer_than_the_search_files_is_the_searcher_s_own(tmp_path) -> None:
    """The trials of a save after the search's: the journal already holds the trial the saved search never saw."""
    sweep = Sweep(tmp_path)
    sweep.start("a")
    sweep.save_search()
    sweep.start("b")
    sweep.save_trials({"a": "RUNNING", "b": "RUNNING"})
    generator = sweep.resume()
    assert generator.get_state()["counter"] == 2 and generator.searcher.live_trials == {"a", "b"}
    sweep.searcher.on_trial_result("b", {"stsb_dev": 30.0, "training_iteration": 1})
    sweep.searcher.on_trial_complete("b", FINAL)
    assert sweep.optuna_trials() == {"a": TrialState.RUNNING, "b": TrialState.COMPLETE}


def test_a_trial_told_before_the_driver_was_lost_is_told_once(tmp_path) -> None:
    """The journal has the trial's end, the snapshot still has it running: Tune runs it again from its checkpoint,
    and its second end changes nothing in the study."""
    sweep = Sweep(tmp_path)
    sweep.start("a")
    sweep.save_search()
    sweep.save_trials({"a": "RUNNING"})
    sweep.searcher.on_trial_complete("a", FINAL)
    sweep.resume()
    sweep.searcher.on_trial_result("a", {"stsb_dev": 99.0, "training_iteration": 1})
    sweep.searcher.on_trial_complete("a", {**FINAL, "stsb_dev": 99.0})
    assert sweep.optuna_trials() == {"a": TrialState.COMPLETE} and sweep.searcher.study.trials[0].value == 40.0


def test_a_search_that_ran_out_on_lost_trials_creates_them_again(tmp_path) -> None:
    sweep = Sweep(tmp_path, num_samples=2)
    sweep.start("a", "b")
    sweep.save_search(finished=True)  # saved after it created its last trial
    sweep.save_trials({"a": "RUNNING"})
    generator = sweep.resume()
    assert generator.get_state()["counter"] == 1 and not generator.is_finished()
    assert generator.searcher.live_trials == {"a"}


def test_a_lost_trial_of_the_defaults_is_queued_again(tmp_path) -> None:
    """The trial that evaluated the paper's defaults was lost with the driver: the defaults are queued again, and the
    resumed sweep's next trial evaluates them."""
    defaults = dict(TOY_SPACE.first_point)
    sweep = Sweep(tmp_path, first=[defaults])
    assert sweep.start("a")["a"] == defaults
    sweep.save_search()
    sweep.save_trials({})
    sweep.resume()
    assert sweep.start("b")["b"] == defaults
    assert sweep.optuna_trials() == {"a": TrialState.FAIL, "b": TrialState.RUNNING}
    sweep.save_search("2026-11-24_10-00-01")
    sweep.save_trials({"b": "RUNNING"}, "2026-11-24_10-00-01")
    sweep.resume()  # agreeing files: nothing more is queued
    assert sweep.start("c")["c"] != defaults


def test_the_search_agrees_with_the_trials_in_the_storage_not_with_newer_staging_files(tmp_path) -> None:
    """A driver on a host that stays up saved its state to its staging folder and was lost before uploading it. The
    next resume restores the trials from the storage's older experiment state and the search from the staging
    folder: the search agrees with the storage's trials (a third trial, started after the upload, is lost)."""
    sweep = Sweep(tmp_path / "storage", max_concurrent=3)
    sweep.start("a", "b", "c")
    sweep.save_trials({"a": "RUNNING", "b": "RUNNING"}, "2026-11-24_10-00-01")  # the last upload
    staging = tmp_path / "staging"
    staging.mkdir()
    sweep.generator.save_to_dir(str(staging), "2026-11-24_10-00-02")  # the lost driver's last save, never uploaded
    generator = sweep.resume(staging)
    assert generator.get_state()["counter"] == 2 and generator.searcher.live_trials == {"a", "b"}
    assert sweep.optuna_trials()["c"] == TrialState.FAIL


@pytest.mark.slow  # two Tune starts and five toy trials: about 80 s on 2 cores
def test_a_resume_from_a_torn_snapshot_runs_each_sample_once(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    """Real Ray Tune: a sweep interrupted at its third trial, whose experiment state then loses its last trial (a
    driver lost while Tune uploaded its files), resumes to exactly ``num_samples`` trials, each with one Optuna trial
    and one MLflow run, none left RUNNING."""
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import locate

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 4, "sleep_s": 0.5}, time_budget_s=240)
    folder = interrupted_sweep(config, 3)
    path = max(folder.glob("experiment_state-*.json"))
    state = json.loads(path.read_text())
    lost = json.loads(state["trial_data"][-1][0])
    state["trial_data"] = state["trial_data"][:-1]
    path.write_text(json.dumps(state))
    told = lost["status"] == "TERMINATED"  # it ended before the interrupt: Optuna has its result, rightly
    outcome = resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                           echo=lambda line: None)
    assert outcome.counts == {"finished": 4, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name("toy")
    runs = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    assert len(runs) == 4 == len({r.data.tags[TRIAL_ID_TAG] for r in runs})
    assert lost["trial_id"] not in {r.data.tags[TRIAL_ID_TAG] for r in runs}  # its run deleted, another took its place
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 4
    study = load_study(locate(str(folder)))
    named = Counter(t.user_attrs[TUNE_TRIAL_ATTR] for t in study.trials)
    assert set(named.values()) == {1} and len(named) == 5  # one Optuna trial per Tune trial, the lost one included
    states = sorted(t.state.name for t in study.trials)
    assert states == ["COMPLETE"] * (5 if told else 4) + ([] if told else ["FAIL"]), states  # none left RUNNING


def test_a_resumed_search_does_not_propose_its_first_random_points_again(tmp_path) -> None:
    """The sampler comes back as the Tuner pickled it when the sweep began: without fresh random numbers its start-up
    would propose the first trials' points once more."""
    sweep = Sweep(tmp_path, num_samples=8, max_concurrent=8)
    first = sweep.start("a", "b")
    sweep.save_search()
    sweep.save_trials({"a": "RUNNING", "b": "RUNNING"})
    sweep.resume()
    again = sweep.start("c", "d")
    assert not {json.dumps(c, sort_keys=True) for c in first.values()} & {
        json.dumps(c, sort_keys=True) for c in again.values()}


@pytest.mark.slow
def test_a_sweep_killed_before_tunes_first_snapshot_fails_the_trials_it_had_asked(tmp_path, tiny_bert_dir,
                                                                                  tracking_uri, ray_session):
    """Real Ray Tune: a sweep killed before Tune saved its first snapshot (only ``tuner.pkl`` of Tune's state) starts
    afresh on resume; the Optuna trials the lost driver had asked are told FAIL, and the runs of its Tune trials,
    left RUNNING by the kill, are closed and deleted: none stays RUNNING, one active run per trial."""
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import locate

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=3, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 12, "sleep_s": 0.5}, time_budget_s=240)
    folder = interrupted_sweep(config, 2)
    for path in folder.iterdir():  # Tune's snapshot and search files: what a kill before the first save leaves
        if path.is_file() and path.name.startswith(("experiment_state", "searcher-state", "search_gen_state")):
            path.unlink()
    asked = [t for t in load_study(locate(str(folder))).trials if t.state == TrialState.RUNNING]
    client = MlflowClient(tracking_uri)
    for run in client.search_runs([e.experiment_id for e in client.search_experiments()],
                                  "attributes.status = 'KILLED'"):
        client.update_run(run.info.run_id, status="RUNNING")  # as a SIGKILL leaves them
    assert asked, "the interrupted trial is Optuna's, running"
    outcome = resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                           echo=lambda line: None)
    # afresh: Tune has no trial to restore
    assert outcome.counts == {"finished": 3, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    study = load_study(locate(str(folder)))
    by_number = {t.number: t for t in study.trials}
    assert all(by_number[t.number].state == TrialState.FAIL for t in asked)
    assert all(by_number[t.number].user_attrs.get("fail_reason") == LOST_REASON for t in asked)
    assert not [t for t in study.trials if t.state == TrialState.RUNNING]
    every = client.search_runs([outcome.experiment_id], f"tags.`mlflow.parentRunId` = '{outcome.parent_run_id}'",
                               run_view_type=ViewType.ALL)
    assert not [r for r in every if r.info.status == "RUNNING"]
    active = [r for r in every if r.info.lifecycle_stage == "active"]
    assert len(active) == 3 and {r.data.tags[TRIAL_ID_TAG] for r in active} == set(outcome.results.get_dataframe()[
        "trial_id"])
    lost = [r for r in every if r.info.lifecycle_stage == "deleted"]  # the lost Tune trials' runs: closed, deleted
    assert len(lost) == 2 and all(r.info.status == "KILLED" for r in lost)
