"""The best trial as people see it: its label in the log and the tables, and what its registered version says.

A trial's label (``t03``, ``c02``; :mod:`sentsweep.tracking.names`) is its place in Tune's list of trials, which a
``ResultGrid`` keeps in the same order; the driver's tracking callback names the trial's run with the same number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sentsweep.platform.results import FIGURE_SUFFIXES
from sentsweep.platform.tracking.descriptions import model_version_description, model_version_tags
from sentsweep.tracking.names import CONFIRMATION_PREFIX, SEARCH_PREFIX, trial_label, ui_link

if TYPE_CHECKING:
    from ray.tune import Result

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.outcome import SweepOutcome
    from sentsweep.platform.tracking.parent_run import SweepRun

#: The sweep run's tag naming its best trial by label (``sentsweep.best_trial_id`` keeps Tune's id).
BEST_LABEL_TAG = "sentsweep.best_trial"


def result_label(results: Iterable[Result] | None, trial_id: str, prefix: str = SEARCH_PREFIX) -> str:
    """The label of trial ``trial_id`` among ``results`` (Tune's id when it is not there)."""
    for number, result in enumerate(results or [], 1):
        if str((result.metrics or {}).get("trial_id")) == trial_id:
            return trial_label(number, prefix) or trial_id
    return trial_id


def best_label(outcome: SweepOutcome) -> str:
    """The best trial's label: a search trial's ``t03``, or a confirmation seed's ``c02 (a further seed of t03)``."""
    trial_id = outcome.best_trial_id or ""
    stage = outcome.confirmation
    if stage is None or stage.chosen.original:
        return result_label(outcome.results, trial_id)
    seed = result_label(stage.results, trial_id, CONFIRMATION_PREFIX)
    return f"{seed} (a further seed of {result_label(outcome.results, stage.winner.trial_id)})"


def best_figures(outcome: SweepOutcome, config: SweepConfig) -> dict[str, float]:
    """The best trial's dev figure, its test figures and, after a confirmation, its configuration's seeds."""
    figures: dict[str, float] = {f"dev_{config.metric}": outcome.best_value} if outcome.best_value is not None else {}
    figures.update({f"test_{k}": v for k, v in (outcome.final_metrics or {}).items()
                    if k.endswith(FIGURE_SUFFIXES) and math.isfinite(v)})
    if outcome.confirmation is not None:
        summary = outcome.confirmation.winner.interval
        if summary.n:
            figures.update({f"confirmed_{config.metric}_{k}": float(getattr(summary, k))
                            for k in ("mean", "low", "high", "n") if math.isfinite(float(getattr(summary, k)))})
    return figures


def version_about(outcome: SweepOutcome, config: SweepConfig, sweep: SweepRun,
                  searched: Iterable[str]) -> tuple[str, dict[str, str]]:
    """The registered version's description and tags: the trial, its configuration, its figures, the sweep."""
    label = best_label(outcome)
    values: dict[str, Any] = {k: outcome.best_config[k] for k in searched if k in (outcome.best_config or {})}
    figures = best_figures(outcome, config)
    link = ui_link(sweep.tracking_uri, sweep.experiment_id, outcome.best_run_id) if outcome.best_run_id else None
    description = model_version_description(label, values, figures, sweep.sweep_name, link)
    tags = model_version_tags(label, outcome.best_trial_id or "", values, figures, sweep.sweep_name,
                              outcome.best_run_id)
    return description, tags
