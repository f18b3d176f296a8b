"""A real warm-started sweep (Ray Tune, Optuna, MLflow): its searcher holds the earlier sweep's finished trials,
read from the earlier sweep's journal, which stays as it was."""

from __future__ import annotations

import shutil

import pytest

from sentsweep.platform.location import locate
from sentsweep.platform.results import WARM_START_ATTR
from sentsweep.platform.search.study_store import load_study

pytestmark = pytest.mark.slow  # a second sweep of the toy (about a minute on 2 cores)


def test_warm_started_sweep_starts_from_the_earlier_trials(toy_sweep, tmp_path, tiny_bert_dir, mlflow_template):
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    earlier = locate(toy_sweep.sweep_dir)
    taught = [t for t in load_study(earlier).trials if t.state.name in ("COMPLETE", "PRUNED")]
    assert len(load_study(earlier).trials) == 5  # every trial of the earlier sweep, as it finished

    shutil.copy(mlflow_template, tmp_path / "mlruns.db")
    config = toy_config(tmp_path, tiny_bert_dir, f"sqlite:///{tmp_path / 'mlruns.db'}", num_samples=2,
                        max_concurrent_trials=1, warm_start=toy_sweep.sweep_dir, plots=False, export=False)
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lines.append)
    assert f"warm start: {len(taught)} trials of {toy_sweep.sweep_dir}" in lines[0]
    study = load_study(locate(outcome.sweep_dir))
    prior = [t for t in study.trials if t.user_attrs.get(WARM_START_ATTR) == earlier.name]
    assert len(prior) == len(taught) == 4  # finished, infeasible and two pruned; the crash taught nothing
    assert len(study.trials) == len(taught) + 2
    # the paper point was evaluated by the earlier sweep: not again
    assert all(t.params != {"lr": 1e-3, "scale": 1.0} for t in study.trials if t not in prior)
    assert len(load_study(earlier).trials) == 5  # the earlier journal was read, not written
