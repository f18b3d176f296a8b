"""The sweep's scheduler: ASHA that lets a trial reach its own end and never stops the reference trial."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from sentsweep.platform.config import SweepConfig, parse_sweep_config
from sentsweep.platform.results import FINAL_KEY, is_reference
from sentsweep.platform.search.scheduler import build_scheduler
from sentsweep.trainables.report_keys import TOTAL_STEPS_KEY

PAPER = {"lr": 2e-5, "pooling": "mean"}


@dataclass
class _Trial:
    trial_id: str
    config: dict[str, Any] = field(default_factory=dict)


def _asha(reference: dict[str, Any] | None = None) -> ASHAScheduler:
    config = SweepConfig(name="s", method="toy", scheduler={"grace_period": 1, "reduction_factor": 2, "max_t": 8})
    asha = build_scheduler(config, reference)
    asha.set_search_properties("score", "max")
    return asha


def test_asha_places_rungs_below_max_t_but_never_stops_a_trial_for_reaching_it():
    asha = build_scheduler(SweepConfig(name="s", method="toy", scheduler={"grace_period": 1, "max_t": 2}))
    assert isinstance(asha, ASHAScheduler)
    asha.set_search_properties("score", "max")
    trial = _Trial("t")
    asha.on_trial_add(None, trial)
    decisions = [asha.on_trial_result(None, trial, {"training_iteration": i, "score": 1.0}) for i in (1, 2, 3)]
    decisions.append(asha.on_trial_result(None, trial, {"training_iteration": 4, "score": 1.0, FINAL_KEY: 1.0}))
    assert decisions == [TrialScheduler.CONTINUE] * 4


def test_scheduler_choice():
    fifo = build_scheduler(SweepConfig(name="s", method="toy", scheduler={"type": "fifo"}))
    assert type(fifo).__name__ == "FIFOScheduler"


def _worst_at_every_rung(asha: ASHAScheduler, trial: _Trial, others: list[_Trial]) -> list[str]:
    """Three better trials reach each rung first; ``trial`` then reports the worst value there."""
    for t in [*others, trial]:
        asha.on_trial_add(None, t)
    decisions = []
    for step in (1, 2, 4, 8):
        for i, other in enumerate(others):
            asha.on_trial_result(None, other, {"training_iteration": step, "score": 10.0 + i})
        decisions.append(asha.on_trial_result(None, trial, {"training_iteration": step, "score": 0.0}))
    return decisions


def test_asha_never_stops_the_reference_trial_even_when_it_is_the_worst_at_each_rung():
    others = [_Trial(f"o{i}", {"lr": 1e-4 * (i + 1), "pooling": "cls", "seed": 0}) for i in range(3)]
    reference = _Trial("ref", {**PAPER, "seed": 0, "model": "m"})
    decisions = _worst_at_every_rung(_asha(PAPER), reference, others)
    assert decisions == [TrialScheduler.CONTINUE] * 4


def test_the_same_trial_without_a_reference_is_stopped_at_the_first_rung():
    others = [_Trial(f"o{i}", {"lr": 1e-4 * (i + 1), "pooling": "cls"}) for i in range(3)]
    decisions = _worst_at_every_rung(_asha(None), _Trial("ref", dict(PAPER)), others)
    assert decisions[0] == TrialScheduler.STOP


def test_a_trial_off_the_paper_setting_is_still_stopped_when_a_reference_is_set():
    others = [_Trial(f"o{i}", {"lr": 1e-4 * (i + 1), "pooling": "cls"}) for i in range(3)]
    decisions = _worst_at_every_rung(_asha(PAPER), _Trial("near", {**PAPER, "lr": 3e-5}), others)
    assert decisions[0] == TrialScheduler.STOP


def test_the_reference_trials_value_still_enters_the_rung():
    """Its low value counts in the rung's cut-off: a later trial just above it survives a rung of two."""
    asha = _asha(PAPER)
    reference, later = _Trial("ref", dict(PAPER)), _Trial("later", {"lr": 1.0, "pooling": "max"})
    for t in (reference, later):
        asha.on_trial_add(None, t)
    asha.on_trial_result(None, reference, {"training_iteration": 1, "score": 0.0})
    assert asha.on_trial_result(None, later, {"training_iteration": 1, "score": 0.5}) == TrialScheduler.CONTINUE


def test_is_reference_needs_every_setting_of_the_point():
    assert is_reference({**PAPER, "seed": 3}, PAPER)
    assert not is_reference({"lr": 2e-5}, PAPER)
    assert not is_reference({**PAPER, "pooling": "cls"}, PAPER)
    assert not is_reference(dict(PAPER), None) and not is_reference(None, PAPER)


def test_reference_paper_is_short_for_the_paper_setting_and_figures_are_numbers():
    config = parse_sweep_config({"name": "s", "method": "toy", "reference": "paper"})
    assert config.reference is not None and config.reference.setting == "paper" and config.reference.figures == {}
    full = parse_sweep_config({"name": "s", "method": "toy", "reference": {
        "setting": "paper", "source": "Table 2", "figures": {"sts_avg7": 78.97}}})
    assert full.reference.figures == {"sts_avg7": 78.97}
    assert parse_sweep_config({"name": "s", "method": "toy"}).reference is None


def test_a_restored_asha_recalls_its_rungs_from_the_trials_reports() -> None:
    """Tune saves no scheduler: a restored ASHA lets a poor trial past the first rung; one that recalled the past
    reports stops it there, as the uninterrupted sweep would. FIFO has nothing to recall."""
    from ray.tune.schedulers import FIFOScheduler

    from sentsweep.platform.search.scheduler import recall

    past = {f"o{i}": [{"training_iteration": 1, "score": 80.0 + i, "config": {"lr": 1e-4 * (i + 1)}},
                      {"training_iteration": 2, "score": 81.0 + i, "config": {"lr": 1e-4 * (i + 1)}}]
            for i in range(3)}
    poor = {"training_iteration": 1, "score": 50.0}
    empty = _asha()
    empty.on_trial_add(None, _Trial("new"))
    assert empty.on_trial_result(None, _Trial("new"), poor) == TrialScheduler.CONTINUE
    config = SweepConfig(name="s", method="toy", scheduler={"grace_period": 1, "reduction_factor": 2, "max_t": 8})
    restored = build_scheduler(config)  # as Tuner.restore unpickles it: Tune tells the metric when fit begins
    assert recall(restored, past) == 3
    assert restored.set_search_properties("score", "max")  # Tune's check at fit still passes
    restored.on_trial_add(None, _Trial("new"))
    assert restored.on_trial_result(None, _Trial("new"), poor) == TrialScheduler.STOP
    good = {"training_iteration": 1, "score": 90.0}
    restored.on_trial_add(None, _Trial("good"))
    assert restored.on_trial_result(None, _Trial("good"), good) == TrialScheduler.CONTINUE
    assert recall(FIFOScheduler(), past) == 0


def test_a_trial_worst_at_its_last_evaluation_goes_on_to_its_final_report():
    """It trained every step: stopping it would save only its final evaluation and call a full run pruned. The same
    value one evaluation before its end is stopped."""
    decisions = {}
    for total_steps in (2.0, 4.0):
        asha, others, trial = _asha(None), [_Trial(f"o{i}") for i in range(3)], _Trial("t")
        for t in [*others, trial]:
            asha.on_trial_add(None, t)
        for i, other in enumerate(others):
            asha.on_trial_result(None, other, {"training_iteration": 1, "score": 10.0 + i})
        report = {"training_iteration": 1, "score": 0.0, "step": 2.0, TOTAL_STEPS_KEY: total_steps}
        decisions[total_steps] = asha.on_trial_result(None, trial, report)
    assert decisions == {2.0: TrialScheduler.CONTINUE, 4.0: TrialScheduler.STOP}


def test_the_first_point_and_its_noise_replicas_are_never_stopped_while_they_measure_the_noise():
    """Their values are the noise the search's improvement is compared with: a stop at an early rung would measure
    the noise of an early evaluation instead of the final one."""
    from types import SimpleNamespace

    from sentsweep.platform.driver.specs import unstopped_point

    space = SimpleNamespace(first_point=dict(PAPER))
    measured = SweepConfig(name="s", method="toy", stop_when="converged", convergence={"noise_sd": None})
    given = SweepConfig(name="s", method="toy", stop_when="converged", convergence={"noise_sd": 0.2})
    assert unstopped_point(measured, space) == PAPER
    assert unstopped_point(given, space) is None  # no replicas run: ASHA may stop the first point
    assert unstopped_point(SweepConfig(name="s", method="toy"), space) is None
    assert unstopped_point(SweepConfig(name="s", method="toy", reference="paper"), space) == PAPER
    others = [_Trial(f"o{i}", {"lr": 1e-4 * (i + 1), "pooling": "cls", "seed": 0}) for i in range(3)]
    replica = _Trial("replica", {**PAPER, "seed": 1008})
    decisions = _worst_at_every_rung(_asha(unstopped_point(measured, space)), replica, others)
    assert decisions == [TrialScheduler.CONTINUE] * 4
