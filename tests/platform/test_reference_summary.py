"""The final summary's side-by-side lines of a sweep with a reference trial (no Ray: results as plain objects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sentsweep.platform.config import parse_sweep_config
from sentsweep.platform.outcome import Candidate, ConfirmationOutcome, SeedRun, SweepOutcome
from sentsweep.platform.report.winner import find_reference, side_by_side

PAPER = {"lr": 2e-5, "scale": 20.0}
CONFIG = parse_sweep_config({"name": "s", "method": "toy", "metric": "stsb_dev", "reference": {
    "source": "Table IV", "selection": "not stated", "figures": {"stsb_test": 85.75}}})


@dataclass
class _Result:
    config: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    error: Any = None
    filesystem: Any = None
    path: str = "/tmp/sweep/trial"


def _outcome(results: list[_Result], confirmation: ConfirmationOutcome | None = None) -> SweepOutcome:
    return SweepOutcome("s", "/tmp/s", "run", "0", "sqlite://", {"finished": len(results)}, 1.0,
                        best_trial_id="t2", best_value=80.0, best_config={"lr": 5e-5, "scale": 20.0, "seed": 0},
                        final_metrics={"stsb_test": 84.0}, results=results, confirmation=confirmation,
                        reference_point=dict(PAPER))


RESULTS = [_Result({**PAPER, "seed": 0}, {"trial_id": "t1", "stsb_dev": 70.0, "stsb_test": 83.5}),
           _Result({"lr": 5e-5, "scale": 20.0, "seed": 0}, {"trial_id": "t2", "stsb_dev": 80.0, "stsb_test": 84.0})]


def test_the_reference_is_the_trial_with_the_papers_settings():
    assert find_reference(RESULTS, PAPER) is RESULTS[0]
    assert find_reference(RESULTS[1:], PAPER) is None


def test_without_confirmation_the_winner_is_one_run_beside_the_paper_and_its_setting():
    lines = side_by_side(CONFIG, _outcome(RESULTS), RESULTS[0], PAPER)
    assert "Table IV" in lines[0] and "no confirmation" in lines[1]
    assert lines[2].split()[-3:] == ["t01", "trial", "t02"]  # labels: their places in the results
    assert lines[3].split() == ["stsb_test", "85.75", "83.50", "84.00", "(1", "run)"]
    assert lines[4].split()[:4] == ["stsb_dev", "-", "70.00", "80.00"]
    assert "the paper's: not stated" in lines[5]
    assert lines[6].endswith("lr 2e-05 -> 5e-05")


def test_with_confirmation_the_winner_shows_its_interval_over_the_further_seeds():
    runs = [SeedRun("t2", 0, 80.0, True, {"stsb_test": 84.0}),
            SeedRun("c1", 1, 79.0, False, {"stsb_test": 83.0}), SeedRun("c2", 2, 81.0, False, {"stsb_test": 85.0})]
    winner = Candidate(1, "t2", {"lr": 5e-5}, runs)
    confirmation = ConfirmationOutcome("stage", "lower_bound", [winner], winner, runs[1])
    lines = side_by_side(CONFIG, _outcome(RESULTS, confirmation), RESULTS[0], PAPER)
    assert "confirmation, lower_bound" in lines[1]
    assert "84.00 +- " in lines[3] and "(n=2" in lines[3]
    assert "80.00 +- " in lines[4]


def test_a_reference_that_did_not_run_is_said_so():
    lines = side_by_side(CONFIG, _outcome(RESULTS[1:]), None, PAPER)
    assert "did not run" in lines[2] and lines[3].split()[:3] == ["stsb_test", "85.75", "-"]
