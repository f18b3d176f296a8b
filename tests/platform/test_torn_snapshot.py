"""A sweep resumed from a snapshot whose files come from different saves (the driver lost while Tune uploaded them,
:mod:`sentsweep.platform.torn_snapshot`): real Ray Tune, the toy method, a sweep interrupted at its third trial
whose saved files are then made to disagree as a cut-short upload leaves them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mlflow import MlflowClient
from optuna.trial import TrialState
from ray.tune.search import ConcurrencyLimiter

from sentsweep.platform.resume_samples import ResizableSearchGenerator
from sentsweep.platform.search import build_searcher
from sentsweep.tracking.vocabulary import ROLE_TAG, TRIAL_ID_TAG
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, interrupted_sweep, toy_config


def _state_file(folder: Path) -> Path:
    return max(folder.glob("experiment_state-*.json"))


def _edit_trials(folder: Path, edit) -> list[dict]:
    """Rewrite the trials of the folder's newest experiment state through ``edit(trials) -> trials`` (each a
    ``(trial, run metadata)`` pair of dicts, as Tune wrote them); the trials before the edit."""
    path = _state_file(folder)
    state = json.loads(path.read_text())
    before = [(json.loads(t), json.loads(m)) for t, m in state["trial_data"]]
    state["trial_data"] = [[json.dumps(t), json.dumps(m)] for t, m in edit(before)]
    path.write_text(json.dumps(state))
    return [t for t, _ in before]


def _restored_search(config, folder: Path) -> ResizableSearchGenerator:
    """The search chain a resume builds (:func:`~sentsweep.platform.resume_samples.resize_search`), restored from
    ``folder`` as Tune restores it."""
    searcher = build_searcher(config, TOY_SPACE.define_by_run, [TOY_SPACE.first_point])
    generator = ResizableSearchGenerator(ConcurrencyLimiter(searcher, max_concurrent=config.max_concurrent_trials),
                                         config.num_samples)
    generator.restore_from_dir(str(folder))
    return generator


@pytest.mark.slow  # two Tune starts and seven toy trials: about 100 s on 2 cores
def test_a_resume_from_a_torn_snapshot_runs_each_sample_once(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from sentsweep.platform.storage import locate
    from sentsweep.platform.sweep import resume_sweep

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=4, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 4, "sleep_s": 0.5}, time_budget_s=240)
    folder = interrupted_sweep(config, 3)

    # newer trials than the search: the experiment state holds two trials the searcher never suggested, one ended
    # (told to Optuna as it ended) and one running (adopted with its parameters; its results reach Optuna)
    newer = tmp_path / "newer"
    shutil.copytree(folder, newer)
    trials = _edit_trials(newer, lambda pairs: [*pairs, *(({**t, "trial_id": new, "status": status}, m) for new, status
                                                         in (("0ended00", "TERMINATED"), ("0running", "RUNNING"))
                                                         for t, m in pairs[:1])])
    generator = _restored_search(config, newer)
    limiter, searcher = generator.searcher, generator.searcher.searcher
    assert generator._counter == len(trials) + 2
    assert limiter.live_trials == {t["trial_id"] for t in trials if t["status"] not in ("TERMINATED", "ERROR")} | {
        "0running"}
    first = searcher._ot_trials[trials[0]["trial_id"]]
    ended, running = (searcher.study.trials[searcher._ot_trials[i].number] for i in ("0ended00", "0running"))
    assert ended.state == TrialState.COMPLETE and ended.value == searcher.study.trials[first.number].value
    assert running.state == TrialState.RUNNING and running.params == searcher.study.trials[first.number].params
    searcher.on_trial_result("0running", {"stsb_dev": 50.0, "training_iteration": 1})  # Optuna's KeyError before
    searcher.on_trial_complete("0running", {"stsb_dev": 51.0, "training_iteration": 2, "final": 1.0})
    assert searcher.study.trials[running.number].state == TrialState.COMPLETE

    # older trials than the search: the last trial started is not in the experiment state, but the generator
    # counted it and the limiter holds it running (one at a time: no trial would start again)
    trials = _edit_trials(folder, lambda pairs: pairs[:-1])
    lost = trials[-1]["trial_id"]
    told = trials[-1]["status"] == "TERMINATED"  # it ended before the interrupt: Optuna has its result, rightly
    outcome = resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                           echo=lambda line: None)
    assert outcome.counts == {"finished": 4, "pruned": 0, "failed": 0}
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.get_experiment_by_name("toy")
    runs = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    assert len(runs) == 4 == len({r.data.tags[TRIAL_ID_TAG] for r in runs}) and lost not in {
        r.data.tags[TRIAL_ID_TAG] for r in runs}  # the lost trial's run was deleted, another trial took its place
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 4
    study = locate(str(folder)).load_study()
    states = sorted(t.state.name for t in study.trials)
    assert states == ["COMPLETE"] * (5 if told else 4) + ([] if told else ["FAIL"]), states  # none left RUNNING


def _search(num_samples: int = 4, max_concurrent: int = 2, first: list[dict] | None = None) -> ResizableSearchGenerator:
    """The chain a resume builds around the sweep's searcher, over the toy space (no Ray needed); ``first``: the
    points it evaluates first (a sweep's paper defaults)."""
    from sentsweep.platform.config import SweepConfig

    config = SweepConfig(name="t", method="toy", search_space="toy", metric="stsb_dev", mode="max", seed=3,
                         num_samples=num_samples)
    searcher = build_searcher(config, TOY_SPACE.define_by_run, first or [])
    generator = ResizableSearchGenerator(ConcurrencyLimiter(searcher, max_concurrent=max_concurrent), num_samples)
    generator._total_samples = num_samples  # as its set_state leaves it on a resume
    return generator


def _started(generator: ResizableSearchGenerator, *trial_ids: str) -> dict[str, dict]:
    """Suggest ``trial_ids`` through the chain as Tune's generator does (counted, limited); their configs."""
    configs = {}
    for trial_id in trial_ids:
        configs[trial_id] = generator.searcher.suggest(trial_id)
        generator._counter += 1
    return configs


def test_a_trial_the_snapshot_lacks_is_failed_and_its_slot_freed() -> None:
    from sentsweep.platform.torn_snapshot import SnapshotTrial, reconcile

    generator = _search()
    configs = _started(generator, "a", "b")
    final = {"stsb_dev": 40.0, "training_iteration": 2, "final": 1.0}
    generator.searcher.on_trial_complete("a", final)
    _started(generator, "c")
    # the experiment state of a save before "c" started: "b" running, "c" unknown to it
    changes = reconcile(generator, [SnapshotTrial("a", "TERMINATED", configs["a"], final),
                                    SnapshotTrial("b", "RUNNING", configs["b"])])
    searcher = generator.searcher.searcher
    assert generator._counter == 2 and generator.searcher.live_trials == {"b"}
    assert generator.searcher.num_unfinished_live_trials == 1
    lost = searcher.study.trials[searcher._ot_trials["c"].number]
    assert lost.state == TrialState.FAIL and "not in the snapshot" in lost.user_attrs["fail_reason"]
    assert changes == ["trial counter 3 -> 2", "running trials 2 -> 1",
                       "1 trial(s) the snapshot lacks told FAIL to Optuna"]
    assert reconcile(generator, [SnapshotTrial("a", "TERMINATED", configs["a"], final),
                                 SnapshotTrial("b", "RUNNING", configs["b"])]) == []  # agreeing: nothing changes


def test_a_searcher_that_ran_out_on_lost_trials_creates_them_again() -> None:
    from sentsweep.platform.torn_snapshot import SnapshotTrial, reconcile

    generator = _search(num_samples=2)
    configs = _started(generator, "a", "b")
    generator._finished = True  # the generator's save came after it created its last trial
    reconcile(generator, [SnapshotTrial("a", "RUNNING", configs["a"])])
    assert generator._counter == 1 and not generator._finished and generator.searcher.live_trials == {"a"}


def test_a_lost_trial_of_the_defaults_is_queued_again() -> None:
    """The trial that evaluated the paper's defaults was lost with the driver (the storage's trials come from a save
    before it started): the defaults are queued again, and the resumed sweep's next trial evaluates them."""
    from sentsweep.platform.torn_snapshot import reconcile

    defaults = dict(TOY_SPACE.first_point)
    generator = _search(first=[defaults])
    assert _started(generator, "a")["a"] == defaults
    changes = reconcile(generator, [])
    assert changes[-2:] == ["1 trial(s) the snapshot lacks told FAIL to Optuna",
                            "1 of them a point to evaluate first, queued again"]
    assert _started(generator, "b")["b"] == defaults


def test_a_restored_trial_of_the_defaults_takes_their_waiting_trial() -> None:
    """The storage's trials come from a save after the defaults' trial started, its searcher from one before: the
    trial is adopted as the defaults' waiting trial, so they are not evaluated a second time."""
    from sentsweep.platform.torn_snapshot import SnapshotTrial, reconcile

    defaults = dict(TOY_SPACE.first_point)
    generator = _search(first=[defaults])
    searcher = generator.searcher.searcher
    assert [t.state for t in searcher.study.trials] == [TrialState.WAITING]
    reconcile(generator, [SnapshotTrial("a", "RUNNING", defaults)])
    assert [(t.state, t.params) for t in searcher.study.trials] == [(TrialState.RUNNING, defaults)]
    assert _started(generator, "b")["b"] != defaults
    searcher.on_trial_complete("a", {"stsb_dev": 40.0, "training_iteration": 2, "final": 1.0})
    assert searcher.study.trials[0].state == TrialState.COMPLETE and len(searcher.study.trials) == 2


def test_an_unknown_trial_without_the_spaces_parameters_is_left_out_of_optuna() -> None:
    from sentsweep.platform.torn_snapshot import SnapshotTrial, reconcile

    generator = _search()
    changes = reconcile(generator, [SnapshotTrial("x", "RUNNING", {"unrelated": 1})])
    searcher = generator.searcher.searcher
    assert "x" not in searcher._ot_trials and changes[-1].startswith("1 trial(s) whose parameters")
    searcher.on_trial_result("x", {"stsb_dev": 1.0, "training_iteration": 1})  # no KeyError: nothing to tell
    searcher.on_trial_complete("x", {"stsb_dev": 1.0, "training_iteration": 1, "final": 1.0})
    assert not searcher.study.trials


def _experiment_state(folder: Path, stamp: str, trials: dict[str, dict], status: str = "RUNNING") -> None:
    """An ``experiment_state-<stamp>.json`` holding ``trials`` (id -> config), as Tune writes its trial data."""
    folder.mkdir(parents=True, exist_ok=True)
    data = [[json.dumps({"trial_id": t, "status": status, "config": c}), json.dumps({"last_result": {}})]
            for t, c in trials.items()]
    (folder / f"experiment_state-{stamp}.json").write_text(json.dumps({"trial_data": data}))


def test_the_search_agrees_with_the_trials_in_the_storage_not_with_newer_staging_files(tmp_path) -> None:
    """Review 14, M2: a resumed driver on a host that stays up saved its state to its staging folder and was lost
    before uploading it. The next resume on that host restores the trials from the storage's (older) experiment
    state, but the search from the staging folder's newer files: the search must be made to agree with the storage's
    trials (a third trial, started after the upload, is lost), not with the staging folder's (which agree)."""
    import pyarrow.fs

    saved = _search(max_concurrent=3)
    configs = _started(saved, "a", "b", "c")
    staging, storage = tmp_path / "staging", tmp_path / "storage"
    staging.mkdir()
    saved.save_to_dir(str(staging), "2026-11-24_10-00-02")  # the lost driver's last save, never uploaded
    _experiment_state(staging, "2026-11-24_10-00-02", configs)
    _experiment_state(storage, "2026-11-24_10-00-01", {t: configs[t] for t in ("a", "b")})  # the last upload

    resumed = _search(max_concurrent=3)
    resumed.storage = (pyarrow.fs.LocalFileSystem(), str(storage))
    resumed.restore_from_dir(str(staging))
    searcher = resumed.searcher.searcher
    assert resumed._counter == 2 and resumed.searcher.live_trials == {"a", "b"}
    assert searcher.study.trials[searcher._ot_trials["c"].number].state == TrialState.FAIL
