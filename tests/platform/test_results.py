"""How the platform reads Tune's results: how a trial ended, which settings the search varied."""

from __future__ import annotations

from types import SimpleNamespace

import optuna

from sentsweep.platform.results import (
    BUDGET_STOP_KEY,
    FINAL_KEY,
    counts_text,
    creation_numbers,
    outcome_counts,
    searched_keys,
    trial_end,
    varying_keys,
)
from sentsweep.trainables.report_keys import FAILED_KEY


def test_a_trial_that_ended_before_its_first_report_did_not_start() -> None:
    """No report with a ``training_iteration``: none at all, Tune's own filler (its id, its seconds), or a stop Tune
    marked ``done`` there. A failure stays a failure, and any report makes it pruned or stopped."""
    for result in (None, {}, {"trial_id": "a", "time_total_s": 3.0}, {"trial_id": "a", "done": True}):
        assert trial_end(result) == "not started", result
    assert trial_end(None, error=True) == trial_end({FAILED_KEY: 1.0}) == "failed"
    assert trial_end({"training_iteration": 1, "done": True}) == "pruned"
    assert trial_end({"training_iteration": 1, "done": True, BUDGET_STOP_KEY: True}) == "stopped"
    assert trial_end({"training_iteration": 1}) == "stopped"
    assert trial_end({"training_iteration": 4, FINAL_KEY: 1.0}) == "finished"
    results = [SimpleNamespace(metrics=m, error=None) for m in ({}, {"training_iteration": 1}, {FINAL_KEY: 1.0})]
    assert outcome_counts(results) == {"finished": 1, "pruned": 0, "stopped": 1, "not started": 1, "failed": 0}


def test_a_line_names_stopped_and_not_started_only_when_a_trial_ended_so() -> None:
    counts = {"finished": 3, "running": 0, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    assert counts_text(counts) == "3 finished, 0 running, 0 pruned, 0 failed"
    assert counts_text({**counts, "stopped": 2, "not started": 1}) == (
        "3 finished, 0 running, 0 pruned, 2 stopped, 1 not started, 0 failed")


def test_varying_keys_are_the_settings_that_differ_in_first_seen_order() -> None:
    results = [SimpleNamespace(config={"lr": 1e-4, "seed": 1, "pooling": "mean", "tracking": {"a": 1}}),
               SimpleNamespace(config={"lr": 2e-4, "seed": 2, "pooling": "mean", "tracking": {"a": 2}}),
               SimpleNamespace(config=None)]  # a trial whose config Tune could not restore
    assert varying_keys(results) == ["lr", "seed", "pooling"]  # pooling: missing in one trial, so it differs
    assert varying_keys(results[:2]) == ["lr", "seed"]
    assert varying_keys(results[:2], skip=("tracking", "seed")) == ["lr"]


def test_trials_are_numbered_in_the_order_tune_created_them() -> None:
    """Tune's count in ``experiment_tag`` orders the trials (a plain variant's count starts at 0), for ``Trial``
    objects and result dicts; a trial without it goes after the counted ones, in list order."""
    trials = [SimpleNamespace(trial_id=i, experiment_tag=tag)
              for i, tag in (("c", "3_lr=0.1"), ("a", "1"), ("z", ""), ("b", "2_x=1"))]
    assert creation_numbers(trials) == {"a": 1, "b": 2, "c": 3, "z": 4}
    variants = [{"trial_id": "q", "experiment_tag": "1_seed=2"}, {"trial_id": "p", "experiment_tag": "0_seed=1"}]
    assert creation_numbers(variants) == {"p": 1, "q": 2}
    assert creation_numbers([]) == {}


def test_the_searched_settings_are_the_spaces_even_when_every_trial_set_one_alike() -> None:
    """The winner's line names every setting the space samples: ``pooling`` came out ``mean`` in every trial, and a
    noise replica's seed, which the space does not sample, is no searched setting."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(3):
        trial = study.ask()
        trial.suggest_float("lr", 1e-5, 1e-3, log=True)
        trial.suggest_categorical("pooling", ["mean"])
        study.tell(trial, 1.0)
    results = [SimpleNamespace(config={**t.params, "seed": t.number}) for t in study.trials]
    assert searched_keys(study, results) == ["lr", "pooling"]
    assert searched_keys(None, results) == ["lr", "seed"]  # no study in the folder: what differs
