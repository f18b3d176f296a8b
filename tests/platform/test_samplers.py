"""``searcher: tpe | gp | random | grid`` (sentsweep.platform.search.samplers): each sampler in the same searcher keeps
the paper's defaults first, pruned trials told PRUNED, constraints, warm start and resume."""

from __future__ import annotations

import math
import pickle

import optuna
import pytest
from optuna.trial import TrialState
from ray.tune.search import Searcher

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.samplers import build_sampler, grid_values, space_grid
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.trainables.report_keys import FAILED_KEY, INFEASIBLE_KEY

SAMPLERS = {"tpe": optuna.samplers.TPESampler, "gp": optuna.samplers.GPSampler,
            "random": optuna.samplers.RandomSampler, "grid": optuna.samplers.GridSampler}


def space(trial):
    trial.suggest_float("lr", 1e-5, 1e-3, log=True)
    if trial.suggest_categorical("pooling", ["mean", "cls"]) == "mean":
        trial.suggest_int("layers", 1, 4)


def _config(searcher, **fields):
    return SweepConfig(name="s", method="toy", seed=1, metric="score", startup_trials=2, searcher=searcher, **fields)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_each_sampler_is_built_seeded(name):
    sampler = build_sampler(_config(name), space)
    assert isinstance(sampler, SAMPLERS[name])
    suggest = [build_searcher(_config(name), space, []).suggest("t0") for _ in range(2)]
    assert suggest[0] == suggest[1]  # the same seed, the same first suggestion


def test_the_grid_spans_every_branch_of_the_space():
    grid = space_grid(space, 3)
    assert grid == {"lr": pytest.approx([1e-5, 1e-4, 1e-3]), "pooling": ["mean", "cls"], "layers": [1, 3, 4]}
    assert math.prod(len(values) for values in grid.values()) == 18
    assert grid_values(optuna.distributions.IntDistribution(1, 3), 5) == [1, 2, 3]  # no repeats
    assert grid_values(optuna.distributions.FloatDistribution(0, 1, step=0.25), 3) == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match="no parameter"):
        space_grid(lambda trial: None, 3)


def _tell(searcher, trial_id, result):
    searcher.on_trial_result(trial_id, {"score": 1.0, "training_iteration": 1})
    searcher.on_trial_complete(trial_id, result)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_keeps_defaults_first_pruning_constraints_warm_start_and_resume(name, tmp_path):
    earlier = optuna.create_study(direction="maximize")
    for point in ({"lr": 1e-4, "pooling": "cls"}, {"lr": 1e-3, "pooling": "cls"}):
        earlier.enqueue_trial(point)
    earlier.optimize(lambda t: (space(t), 0.5)[1], n_trials=1)
    diverged = earlier.ask()
    space(diverged)
    diverged.set_constraint("diverged", 1.0)  # an infeasible trial of the earlier sweep (a TPE sweep: one key)
    earlier.tell(diverged, 0.0)
    store = StudyStore(str(tmp_path))
    first = {"lr": 2e-5, "pooling": "mean", "layers": 2}
    searcher = build_searcher(_config(name), space, [first], store=store, study_name="s",
                              history=earlier.get_trials())
    assert searcher.suggest("t0") == first  # the paper's defaults first
    for trial_id in ("t1", "t2", "t3"):
        assert searcher.suggest(trial_id) not in (None, Searcher.FINISHED)
    _tell(searcher, "t0", {"score": 2.0, "training_iteration": 2, FINAL_KEY: 1.0})
    _tell(searcher, "t1", {"score": 0.5, "training_iteration": 1})  # stopped by the scheduler
    _tell(searcher, "t2", {"score": 1.0, FAILED_KEY: 1.0, INFEASIBLE_KEY: "diverged"})
    trials = searcher.study.get_trials()
    assert trials[0].value == 0.5  # the warm start's trials
    assert [t.state for t in trials[2:5]] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.COMPLETE]
    assert trials[3].intermediate_values == {1: 1.0} and trials[4].constraints["diverged"] == 1.0
    if name == "gp":  # every finished trial carries every key: GPSampler refuses a mix
        assert {tuple(sorted(trials[i].constraints)) for i in (0, 1, 2, 4)} == {("diverged", "out_of_memory")}
    restored = pickle.loads(pickle.dumps(searcher))  # a resume reads the study back from the journal
    assert restored.running() == {"t3": 5}
    assert restored.suggest("t4") not in (None, Searcher.FINISHED)  # the sampler models the mixed trials
    assert len(restored.study.get_trials()) == 7


def test_a_done_grid_ends_the_search():
    searcher = build_searcher(_config("grid", grid_points=2), lambda t: {"x2": t.suggest_float("x", 0, 1) * 2}, [])
    points = []
    for i in range(2):
        points.append(searcher.suggest(f"t{i}"))
        searcher.on_trial_complete(f"t{i}", {"score": float(i), FINAL_KEY: 1.0})
    assert sorted(p["x2"] for p in points) == [0.0, 2.0]  # both grid points, each once, before the end
    assert searcher.suggest("t2") == Searcher.FINISHED


def test_searcher_choice_is_checked():
    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import parse_sweep_config

    with pytest.raises(ConfigError, match="searcher"):
        parse_sweep_config({"name": "s", "method": "toy", "searcher": "auto"})
