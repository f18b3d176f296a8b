"""Failures that teach: a diverged or out-of-memory trial reaches Optuna as a constraint violation, and TPE's
next suggestions move away from the infeasible region (real Optuna TPE through the platform's searcher)."""

from __future__ import annotations

import math
import statistics

import pytest
import torch
from optuna.trial import TrialState

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import FINAL_KEY, infeasibility
from sentsweep.platform.search.searcher import build_searcher, infeasible_value
from sentsweep.trainables.loop import NonFiniteLossError
from sentsweep.trainables.method import failure_report
from sentsweep.trainables.report_keys import INFEASIBLE_KEY

#: Learning rates above this diverge (a NaN loss); the best feasible one is just below it.
DIVERGES_ABOVE = 3e-3
STARTUP = 8


def lr_space(trial):
    trial.suggest_float("lr", 1e-5, 1e-1, log=True)


def _searcher(seed: int):
    config = SweepConfig(name="s", method="toy", seed=seed, metric="score", startup_trials=STARTUP)
    return build_searcher(config, lr_space, [])


def _diverged(teach: bool) -> dict:
    report = failure_report("score", NonFiniteLossError(3, math.nan))
    if not teach:  # what the platform did before: a plain deterministic failure, told to Optuna as FAIL
        report.pop(INFEASIBLE_KEY)
    return report


def _search(seed: int, teach: bool, trials: int = 32) -> list[float]:
    """The learning rates TPE suggests after its random start-up, on a toy objective (best at lr = 1e-2,
    so TPE is drawn towards the divergent region)."""
    searcher = _searcher(seed)
    suggested = []
    for i in range(trials):
        lr = searcher.suggest(f"t{i}")["lr"]
        suggested.append(lr)
        if lr > DIVERGES_ABOVE:
            searcher.on_trial_complete(f"t{i}", _diverged(teach))
        else:
            searcher.on_trial_complete(f"t{i}", {"score": -(math.log10(lr) + 2.0) ** 2, FINAL_KEY: 1.0,
                                                 "training_iteration": 1})
    return suggested[STARTUP:]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tpe_moves_away_from_divergent_learning_rates(seed):
    taught, ignored = _search(seed, teach=True), _search(seed, teach=False)
    assert statistics.median(taught) < statistics.median(ignored)
    assert statistics.median(taught) < 2 * DIVERGES_ABOVE
    assert sum(lr > DIVERGES_ABOVE for lr in taught) < 0.7 * sum(lr > DIVERGES_ABOVE for lr in ignored)


def test_infeasible_trial_is_complete_with_a_constraint_and_never_the_best():
    searcher = _searcher(0)
    for tid in ("good", "nan", "oom", "data"):
        searcher.suggest(tid)
    searcher.on_trial_result("good", {"score": 5.0, "training_iteration": 1})
    searcher.on_trial_complete("good", {"score": 7.0, FINAL_KEY: 1.0, "training_iteration": 2})
    searcher.on_trial_complete("nan", failure_report("score", NonFiniteLossError(3, math.nan)))
    oom = failure_report("score", torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert infeasibility(oom) == "out_of_memory"
    searcher.on_trial_complete("oom", oom)
    searcher.on_trial_complete("data", failure_report("score", ValueError("bad row")))
    good, nan, out, data = searcher.study.trials
    assert (nan.state, nan.constraints, nan.value) == (TrialState.COMPLETE, {"diverged": 1.0}, 5.0)
    assert (out.state, out.constraints) == (TrialState.COMPLETE, {"out_of_memory": 1.0})
    assert "OutOfMemoryError" in out.user_attrs["fail_reason"]
    assert data.state == TrialState.FAIL and not data.constraints  # not a property of the settings
    assert searcher.study.best_trial.number == good.number
    assert infeasible_value(searcher.study) == 5.0  # the worst value seen, for the plots' scale
