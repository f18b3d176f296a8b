"""How the platform reads Tune's results: which settings the search varied."""

from __future__ import annotations

from types import SimpleNamespace

from sentsweep.platform.results import varying_keys


def test_varying_keys_are_the_settings_that_differ_in_first_seen_order() -> None:
    results = [SimpleNamespace(config={"lr": 1e-4, "seed": 1, "pooling": "mean", "tracking": {"a": 1}}),
               SimpleNamespace(config={"lr": 2e-4, "seed": 2, "pooling": "mean", "tracking": {"a": 2}}),
               SimpleNamespace(config=None)]  # a trial whose config Tune could not restore
    assert varying_keys(results) == ["lr", "seed", "pooling"]  # pooling: missing in one trial, so it differs
    assert varying_keys(results[:2]) == ["lr", "seed"]
    assert varying_keys(results[:2], skip=("tracking", "seed")) == ["lr"]
