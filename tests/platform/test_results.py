"""How the platform reads Tune's results: which settings the search varied."""

from __future__ import annotations

from types import SimpleNamespace

from sentsweep.platform.results import creation_numbers, varying_keys


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
