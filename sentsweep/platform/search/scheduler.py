"""The sweep's scheduler: ASHA that lets each trial reach its own end and never stops the trials of one point (the
reference, or the first point whose runs measure the noise), or FIFO."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import evaluation_result, is_draining, is_final, is_last_evaluation, is_reference


class FinalAwareASHA(ASHAScheduler):
    """Ray's ASHA where ``max_t`` only places the rungs (a trial makes its own final report), and the trials of the
    ``reference`` point (the paper's setting, or the first point and its noise replicas) enter each rung but are never
    stopped. Final and draining reports never stop a trial, nor does the evaluation at a trial's last step: it
    trained every step, so it goes on to its final report."""

    def __init__(self, reference: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(stop_last_trials=False, **kwargs)
        self.reference = dict(reference) if reference else None
        self.recalled: Mapping[str, Sequence[dict[str, Any]]] | None = None  # reports to replay once the metric is set

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        taken = super().set_search_properties(metric, mode, **spec)
        pending = self.__dict__.pop("recalled", None)  # a scheduler pickled before this attribute has none
        self.recalled = None
        if pending:
            self.replay(pending)
        return taken

    def replay(self, histories: Mapping[str, Sequence[dict[str, Any]]]) -> None:
        for trial_id, results in histories.items():
            # what ASHA reads of a trial it meets again on a resume: its id and its config
            trial = SimpleNamespace(trial_id=trial_id, config=dict(results[0].get("config") or {}) if results else {})
            self.on_trial_add(None, trial)
            for result in results:  # ASHA passes over a report without its metric or time
                self.on_trial_result(None, trial, result)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        if is_final(result) or is_draining(result):
            return TrialScheduler.CONTINUE
        action = super().on_trial_result(tune_controller, trial, evaluation_result(result))
        # the value is in the rung; the reference trial, and a trial that trained every step, always go on
        if is_reference(getattr(trial, "config", None), self.reference) or is_last_evaluation(result):
            return TrialScheduler.CONTINUE
        return action


def recall(scheduler: TrialScheduler, histories: Mapping[str, Sequence[dict[str, Any]]]) -> int:
    """Replay each trial's past reports (``histories``: trial id -> its results) through a restored ASHA, its
    decisions ignored, now or once ``fit`` tells it the metric; the number of trials recalled. Tune saves no
    scheduler, and empty rungs would let the next trials past where the first run would have stopped them."""
    if not isinstance(scheduler, FinalAwareASHA):
        return 0
    if scheduler.metric is None:
        scheduler.recalled = dict(histories)
    else:
        scheduler.replay(histories)
    return len(histories)


def build_scheduler(config: SweepConfig, reference: Mapping[str, Any] | None = None) -> TrialScheduler:
    s = config.scheduler
    if s.type == "fifo":
        return FIFOScheduler()
    return FinalAwareASHA(reference=reference, time_attr="training_iteration", max_t=s.max_t,
                          grace_period=s.grace_period, reduction_factor=s.reduction_factor, brackets=s.brackets)


def scheduler_label(config: SweepConfig) -> str:
    return "ASHA" if config.scheduler.type == "asha" else "the sweep"
