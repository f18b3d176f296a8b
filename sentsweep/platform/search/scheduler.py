"""The scheduler of a sweep: ASHA that lets each trial reach its own end, and never stops the reference trial.

:class:`FinalAwareASHA` is Ray's ASHA with two changes. Its ``max_t`` only places the rungs: a trial ends at its own
step budget, so it makes its final report (test metrics, ``final: 1.0``). And the reference trial, the paper's
setting of a sweep that sets ``reference`` (:class:`~sentsweep.platform.config.ReferenceConfig`), is never stopped:
its value still enters each rung it reaches, so the other trials' cut-offs count it, but the decision for it is
always CONTINUE. Without that a paper config could end with no test figure for the paper's own setting.

A trial is the reference trial when its settings hold the space's first point (:func:`is_reference`): the searcher
asks for that point first, and Tune's trial config carries the sampled settings as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import evaluation_result, is_draining, is_final, is_reference


class FinalAwareASHA(ASHAScheduler):
    """ASHA whose ``max_t`` only places the rungs: a trial ends at its own step budget; the trial holding
    ``reference`` (the paper's setting) is never stopped.

    Ray's ASHA stops every trial at ``max_t``; ours would then miss their final report (test metrics,
    ``final: 1.0``) and count as pruned. The final report itself is never a reason to stop either, nor a draining
    report (a stopping sweep's checkpoint, :mod:`sentsweep.platform.driver.drain`); rungs count evaluations.
    """

    def __init__(self, reference: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(stop_last_trials=False, **kwargs)
        self.reference = dict(reference) if reference else None

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        if is_final(result) or is_draining(result):
            return TrialScheduler.CONTINUE
        action = super().on_trial_result(tune_controller, trial, evaluation_result(result))
        if is_reference(getattr(trial, "config", None), self.reference):
            return TrialScheduler.CONTINUE  # its value is in the rung; the decision is always to go on
        return action


def build_scheduler(config: SweepConfig, reference: Mapping[str, Any] | None = None) -> TrialScheduler:
    """ASHA over ``training_iteration`` (one per dev evaluation), or FIFO (no early stopping); ``reference``: the
    point whose trial ASHA never stops (the space's first point, when the sweep sets ``reference``)."""
    s = config.scheduler
    if s.type == "fifo":
        return FIFOScheduler()
    return FinalAwareASHA(reference=reference, time_attr="training_iteration", max_t=s.max_t,
                          grace_period=s.grace_period, reduction_factor=s.reduction_factor, brackets=s.brackets)


def scheduler_label(config: SweepConfig) -> str:
    """How the scheduler is named in a pruned trial's reason."""
    return "ASHA" if config.scheduler.type == "asha" else "the sweep"
