"""The Ray Tune private names of :mod:`sentsweep._compat.ray_search`: this fails when an upgrade moves them."""

from __future__ import annotations

from ray import tune

from sentsweep._compat.ray_search import restored_tune_config


def test_a_tuner_still_keeps_its_tune_config_where_a_resume_changes_it(tmp_path) -> None:
    config = tune.TuneConfig(num_samples=3, max_concurrent_trials=2)
    tuner = tune.Tuner(lambda settings: None, tune_config=config,
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="compat"))
    kept = restored_tune_config(tuner)
    assert kept is not None, "Ray moved the Tuner's TuneConfig: sentsweep._compat.ray_search needs the new place"
    assert (kept.num_samples, kept.max_concurrent_trials) == (3, 2)
    assert hasattr(kept, "search_alg") and hasattr(kept, "time_budget_s")
