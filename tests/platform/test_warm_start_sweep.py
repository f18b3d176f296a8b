"""A real warm-started sweep (Ray Tune, Optuna, MLflow): its searcher holds the earlier sweep's finished trials,
and both sweeps' studies are in their sqlite mirrors for ``sentsweep dashboard``."""

from __future__ import annotations

import shutil
from pathlib import Path

import optuna
import pytest

from sentsweep.platform.optuna_storage import STUDY_DB, WARM_START_ATTR
from sentsweep.platform.storage import locate

pytestmark = pytest.mark.slow  # a second sweep of the toy (about a minute on 2 cores)


def test_warm_started_sweep_starts_from_the_earlier_trials(toy_sweep, tmp_path, tiny_bert_dir, mlflow_template):
    from sentsweep.platform.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    earlier = locate(toy_sweep.sweep_dir)
    taught = [t for t in earlier.load_study().trials if t.state.name in ("COMPLETE", "PRUNED")]
    mirrored = optuna.load_study(study_name=earlier.name, storage=f"sqlite:///{Path(earlier.uri) / STUDY_DB}")
    assert len(mirrored.trials) == 5  # every trial of the earlier sweep, as it finished

    shutil.copy(mlflow_template, tmp_path / "mlruns.db")
    config = toy_config(tmp_path, tiny_bert_dir, f"sqlite:///{tmp_path / 'mlruns.db'}", num_samples=2,
                        max_concurrent_trials=1, warm_start=toy_sweep.sweep_dir, plots=False, export=False)
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lines.append)
    assert f"warm start: {len(taught)} trials of {toy_sweep.sweep_dir}" in lines[0]
    study = locate(outcome.sweep_dir).load_study()
    prior = [t for t in study.trials if t.user_attrs.get(WARM_START_ATTR) == earlier.name]
    assert len(prior) == len(taught) == 4  # finished, infeasible and two pruned; the crash taught nothing
    assert len(study.trials) == len(taught) + 2
    # the paper point was evaluated by the earlier sweep: not again
    assert all(t.params != {"lr": 1e-3, "scale": 1.0} for t in study.trials if t not in prior)
    own = optuna.load_study(study_name=locate(outcome.sweep_dir).name,
                            storage=f"sqlite:///{Path(outcome.sweep_dir) / STUDY_DB}")
    assert len(own.trials) == 2  # the mirror holds this sweep's own trials only
