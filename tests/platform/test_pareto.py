"""The Pareto front: dominance over maximised and minimised objectives, ties, NaN, and the front's table."""

from __future__ import annotations

import math

import pytest

from sentsweep.platform.objectives import dominates, pareto_front, parse_objective
from sentsweep.platform.report.plots import TrialRecord
from sentsweep.platform.report.winner import front_rows


def test_dominance_needs_at_least_as_good_everywhere_and_better_somewhere():
    assert dominates([2.0, 1.0], [1.0, 2.0], ["max", "min"])
    assert not dominates([2.0, 3.0], [1.0, 2.0], ["max", "min"])  # better in one, worse in the other
    assert dominates([2.0, 2.0], [1.0, 2.0], ["max", "min"])  # equal cost, better quality
    assert not dominates([1.0, 2.0], [1.0, 2.0], ["max", "min"])  # a tie dominates nothing
    assert dominates([1.0, 1.0], [2.0, 2.0], ["min", "min"]) and dominates([2.0, 2.0], [1.0, 1.0], ["max", "max"])
    with pytest.raises(ValueError, match="3 objectives"):
        dominates([1.0, 2.0], [1.0, 2.0], ["max", "min", "min"])
    with pytest.raises(ValueError, match="max or min"):
        dominates([1.0], [2.0], ["up"])


def test_front_of_a_quality_cost_trade_off():
    points = [(80.0, 30.0), (82.0, 50.0), (79.0, 40.0), (82.0, 60.0), (75.0, 10.0), (80.0, 30.0)]
    # 2 is beaten by 0; 3 by 1 (same quality, dearer); 0 and 5 tie: both on the front
    assert pareto_front(points, ["max", "min"]) == [0, 1, 4, 5]
    assert pareto_front(points, ["min", "max"]) == [2, 3, 4]  # 0 and 5 lose to 2, 1 to 3
    assert pareto_front(points, ["max", "max"]) == [3] and pareto_front([], ["max", "min"]) == []


def test_a_point_with_nan_is_neither_on_the_front_nor_dominating():
    assert pareto_front([(math.nan, 0.0), (1.0, 5.0), (0.5, 6.0)], ["max", "min"]) == [1]


def test_three_objectives():
    points = [(1.0, 1.0, 1.0), (2.0, 2.0, 2.0), (1.0, 0.5, 3.0)]
    assert pareto_front(points, ["max", "min", "min"]) == [0, 1, 2]
    assert pareto_front(points, ["max", "max", "max"]) == [1, 2]


def test_front_rows_front_first_best_first_objective_first():
    objectives = [parse_objective("stsb_dev max"), parse_objective("compute_seconds min")]
    trials = [TrialRecord("t0", "finished", {"lr": 1e-3}, metrics={"stsb_dev": 70.0, "time_total_s": 5.0}),
              TrialRecord("t1", "finished", {"lr": 2e-3}, metrics={"stsb_dev": 72.0, "time_total_s": 9.0}),
              TrialRecord("t2", "finished", {"lr": 3e-3}, metrics={"stsb_dev": 69.0, "time_total_s": 8.0}),
              TrialRecord("t3", "finished", {"lr": 4e-3}, metrics={"stsb_dev": math.nan, "time_total_s": 1.0})]
    rows = front_rows(trials, objectives)
    assert [(r["trial_id"], r["on_front"]) for r in rows] == [("t1", 1), ("t0", 1), ("t2", 0)]
    assert rows[0] == {"trial_id": "t1", "stsb_dev": 72.0, "compute_seconds": 9.0, "on_front": 1, "lr": 2e-3}
