"""The searcher tells Optuna the truth: scheduler-stopped trials are PRUNED, crashes and NaN are FAIL."""

from __future__ import annotations

import math

import pytest
from optuna.trial import TrialState

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.samplers import build_sampler
from sentsweep.platform.search.searcher import FAIL_REASON_ATTR, UNREPORTED_REASON, build_searcher
from sentsweep.trainables.report_keys import DRAINING_KEY


def space(trial):
    trial.suggest_float("x", 0.0, 1.0)
    trial.suggest_categorical("pooling", ["mean", "cls"])
    return {"constant": 3}


def _searcher():
    config = SweepConfig(name="s", method="toy", seed=5, metric="score", startup_trials=2)
    return build_searcher(config, space, [{"x": 0.5, "pooling": "cls"}, {"x": 0.1, "pooling": "mean"}])


def _report(searcher, trial_id, values):
    for i, v in enumerate(values, start=1):
        searcher.on_trial_result(trial_id, {"score": v, "training_iteration": i})


def test_first_point_first_then_seeded_tpe():
    a, b = _searcher(), _searcher()
    first = a.suggest("t0")
    assert first == {"x": 0.5, "pooling": "cls", "constant": 3}
    assert a.suggest("t1") == {"x": 0.1, "pooling": "mean", "constant": 3}  # the presets, in order
    assert b.suggest("t0") == first and b.suggest("t1") == {"x": 0.1, "pooling": "mean", "constant": 3}
    third = a.suggest("t2")
    assert isinstance(third, dict) and third == b.suggest("t2")  # TPE's first draw, the same under the same seed
    sampler = a.study.sampler
    assert sampler._multivariate and sampler._constant_liar


def test_tpe_builds_its_good_group_as_the_sweep_says():
    """Hyperopt's ceil(0.25 sqrt(n)) by default, Optuna's ceil(0.1 n) on request; a multi-objective study keeps
    Optuna's own split."""
    def gamma(**fields):
        return build_sampler(SweepConfig(name="s", method="cosent", **fields))._gamma

    assert [gamma()(n) for n in (10, 40, 100, 10_000)] == [1, 2, 3, 25]
    assert [gamma(tpe_gamma="optuna")(n) for n in (10, 40, 100, 10_000)] == [1, 4, 10, 25]
    assert gamma(objectives=["stsb_dev max", "compute_seconds min"]) is None
    with pytest.raises(ValueError, match="tpe_gamma"):
        SweepConfig(name="s", method="toy", tpe_gamma="median")


def test_trial_states_reach_optuna_truthfully():
    searcher = _searcher()
    for tid in ("done", "pruned", "crashed", "nan"):
        searcher.suggest(tid)
    _report(searcher, "done", [1.0, 2.0])
    searcher.on_trial_complete("done", {"score": 2.0, "training_iteration": 3, FINAL_KEY: 1.0})
    searcher.on_trial_complete("pruned", {"score": 0.5, "training_iteration": 1})  # Ray withholds it
    searcher.on_trial_complete("crashed", None, error=True)
    searcher.on_trial_complete("nan", {"score": math.nan, FINAL_KEY: 1.0})
    states = [t.state for t in searcher.study.trials]
    assert states == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.FAIL]
    assert searcher.study.trials[0].value == 2.0
    assert searcher.study.trials[1].intermediate_values == {1: 0.5}  # Optuna keeps the last as its value




def test_a_trial_that_ended_before_its_first_evaluation_is_failed_not_pruned():
    """Stopped by the budget or the time limit before it measured anything: PRUNED without a value would put its
    settings in TPE's bad group. A trial that drained after an evaluation is still PRUNED, with that value."""
    searcher = _searcher()
    for tid in ("unstarted", "stopped", "drained_early", "drained_late"):
        searcher.suggest(tid)
    searcher.on_trial_complete("unstarted")  # Tune stops a pending trial with no result
    searcher.on_trial_complete("stopped", {})
    searcher.on_trial_complete("drained_early", {"score": math.nan, DRAINING_KEY: 1.0, "training_iteration": 1})
    _report(searcher, "drained_late", [0.7])
    searcher.on_trial_complete("drained_late", {"score": 0.7, DRAINING_KEY: 1.0, "training_iteration": 2})
    trials = searcher.study.trials
    assert [t.state for t in trials] == [TrialState.FAIL] * 3 + [TrialState.PRUNED]
    assert [t.user_attrs.get(FAIL_REASON_ATTR) for t in trials] == [UNREPORTED_REASON] * 3 + [None]
    assert trials[3].intermediate_values == {1: 0.7}
    # what TPE learns from: the measured trial alone
    assert [t.number for t in searcher.study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED))] == [3]
