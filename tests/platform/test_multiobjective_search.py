"""The searcher of a multi-objective sweep (real Optuna TPE through the platform's Ray searcher): the study has one
direction per objective and is told every objective of a finished trial; Tune sees the first objective only."""

from __future__ import annotations

import math

import optuna
import pytest
from optuna.study import StudyDirection
from optuna.trial import TrialState
from ray.tune.search import ConcurrencyLimiter

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.searcher import build_searcher, infeasible_value
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.trainables.loop import NonFiniteLossError
from sentsweep.trainables.method import failure_report
from tests.platform.tpe_spy import model_made

OBJECTIVES = ["stsb_dev max", "compute_seconds min"]


def lr_space(trial):
    trial.suggest_float("lr", 1e-5, 1e-1, log=True)


def _config(**raw) -> SweepConfig:
    return SweepConfig.model_validate({"name": "s", "method": "toy", "seed": 0, "startup_trials": 3,
                                       "objectives": OBJECTIVES, **raw})


def _final(dev: float, seconds: float) -> dict:
    return {"stsb_dev": dev, "time_total_s": seconds, "gpus": 0.0, FINAL_KEY: 1.0, "training_iteration": 3}


def test_study_has_both_directions_and_is_told_both_values():
    searcher = build_searcher(_config(), lr_space, [{"lr": 1e-3}])
    assert searcher.study.directions == [StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE]
    assert (searcher.metric, searcher.mode) == ("stsb_dev", "max")  # what Tune and ASHA see
    for tid in ("a", "b", "c", "d", "e"):
        searcher.suggest(tid)
    assert searcher.study.trials[0].params == {"lr": 1e-3}  # the first point still goes first
    searcher.on_trial_result("a", {"stsb_dev": 60.0, "time_total_s": 2.0, "training_iteration": 1})
    searcher.on_trial_complete("a", _final(71.0, 12.5))
    searcher.on_trial_complete("b", {"stsb_dev": 40.0, "time_total_s": 3.0, "training_iteration": 1})  # pruned
    searcher.on_trial_complete("c", {**_final(70.0, 9.0), "stsb_dev": math.nan})
    searcher.on_trial_complete("d", failure_report("stsb_dev", NonFiniteLossError(3, math.nan)))
    searcher.on_trial_complete("e", _final(73.0, 20.0))
    a, b, c, d, e = searcher.study.trials
    assert (a.state, a.values, a.intermediate_values) == (TrialState.COMPLETE, [71.0, 12.5], {})
    assert (b.state, b.values) == (TrialState.PRUNED, None)
    assert c.state == TrialState.FAIL
    assert (d.state, d.constraints, d.values) == (TrialState.COMPLETE, {"diverged": 1.0}, [71.0, 12.5])  # worst seen
    assert {t.number for t in searcher.study.best_trials} == {0, 4}  # the feasible front
    assert infeasible_value(searcher.study) == [71.0, 20.0]


def test_tpe_suggests_from_a_multi_objective_history_under_tunes_wrappers():
    """Tune wraps the searcher (a concurrency limiter, which takes its metric and mode); TPE then models a
    two-objective history past its start-up."""
    searcher = build_searcher(_config(), lr_space, [])
    made = model_made(searcher.study.sampler)
    limited = ConcurrencyLimiter(searcher, max_concurrent=2)
    assert (limited.metric, limited.mode) == ("stsb_dev", "max")
    for i in range(12):
        lr = limited.suggest(f"t{i}")["lr"]
        # quality peaks at lr 1e-2; cost grows as lr falls (a smaller lr needs more steps)
        limited.on_trial_complete(f"t{i}", _final(80.0 - (math.log10(lr) + 2.0) ** 2, -10.0 * math.log10(lr)))
    study = searcher.study
    assert len(study.get_trials(states=(TrialState.COMPLETE,))) == 12
    assert made  # TPE's multivariate model made suggestions
    assert all(len(t.values) == 2 for t in study.trials)


def test_the_journal_gets_the_directions(tmp_path):
    searcher = build_searcher(_config(), lr_space, [], store=StudyStore(str(tmp_path)), study_name="s")
    searcher.suggest("a")
    searcher.on_trial_complete("a", _final(70.0, 5.0))
    stored = optuna.load_study(study_name="s", storage=StudyStore(str(tmp_path)).storage(create=False))
    assert stored.directions == [StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE]
    assert stored.trials[0].values == [70.0, 5.0]


def test_warm_start_from_a_single_metric_sweep_is_refused():
    earlier = build_searcher(SweepConfig(name="e", method="toy", seed=0), lr_space, [])
    earlier.suggest("a")
    earlier.on_trial_complete("a", _final(70.0, 5.0))
    with pytest.raises(ConfigError, match="field 'warm_start': .*1 objective value.* 2 objective"):
        build_searcher(_config(), lr_space, [], history=earlier.study.trials)
    same = build_searcher(_config(), lr_space, [])
    same.suggest("a")
    same.on_trial_complete("a", _final(70.0, 5.0))
    warm = build_searcher(_config(), lr_space, [], history=same.study.trials)
    assert warm.study.trials[0].values == [70.0, 5.0]


def test_a_restored_searcher_keeps_its_objectives(tmp_path):
    """What a resumed sweep gets back from Tune's saved searcher state."""
    import pickle

    searcher = build_searcher(_config(), lr_space, [], store=StudyStore(str(tmp_path)))
    pickled = pickle.dumps(searcher)  # as the Tuner pickles it when the sweep starts
    searcher.suggest("a")
    searcher.on_trial_complete("a", _final(70.0, 5.0))
    searcher.suggest("b")
    searcher.save(str(tmp_path / "searcher.pkl"))
    restored = pickle.loads(pickled)
    restored.restore(str(tmp_path / "searcher.pkl"))
    assert (restored.metric, restored.mode, [o.metric for o in restored.objectives]) == (
        "stsb_dev", "max", ["stsb_dev", "compute_seconds"])
    restored.on_trial_complete("b", _final(72.0, 4.0))
    assert [t.values for t in restored.study.trials] == [[70.0, 5.0], [72.0, 4.0]]


def test_a_further_dev_metric_is_told_at_the_selected_report():
    searcher = build_searcher(_config(objectives=["stsb_dev max", "sickr_trial max", "compute_seconds min"]),
                              lr_space, [])
    searcher.suggest("a")
    for step, (dev, sickr) in enumerate([(60.0, 50.0), (70.0, 55.0), (65.0, 61.0)], start=1):
        searcher.on_trial_result("a", {"stsb_dev": dev, "sickr_trial": sickr, "time_total_s": 2.0 * step,
                                       "training_iteration": step})
    searcher.on_trial_complete("a", _final(70.0, 8.0))  # the final report has no sickr_trial
    assert searcher.study.trials[0].values == [70.0, 55.0, 8.0]
