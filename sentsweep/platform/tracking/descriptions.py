"""The markdown MLflow shows on an experiment's, a sweep run's and a model version's page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sentsweep.tracking.names import SYS_PREFIX, ui_link
from sentsweep.tracking.vocabulary import OUTCOME_TAG

if TYPE_CHECKING:
    from sentsweep.platform.config import SweepConfig


def columns_to_add(metric: str, searched: Sequence[str]) -> str:
    params = ", ".join(f"`{p}`" for p in searched) or "the searched ones"
    return (f"Columns to add (**Columns** above the table): Metrics `{metric}` and `best_{metric}`; Params {params}; "
            f"Tags `{OUTCOME_TAG}`.")


def sweep_description(config: SweepConfig, sweep_name: str, searched: Sequence[str], tracking_uri: str,
                      experiment_id: str) -> str:
    space = config.space_name if isinstance(config.space_name, str) else "the space in its config"
    searched_text = ", ".join(f"`{p}`" for p in searched) or "no parameter"
    return "\n".join([
        f"**{sweep_name}**: {'up to ' if config.stop_when == 'converged' else ''}{config.num_samples} trials of "
        f"`{config.method}` over the space `{space}`, searching {searched_text} for the "
        f"{'highest' if config.mode == 'max' else 'lowest'} dev `{config.metric}`; {config.search_text()}.",
        "",
        "- Expand this run's row for its trials. Each is named after its number and searched values "
        "(`t03 scale=22.4 lr=3.5e-05`); the number is the one `sentsweep compare` and the plots use.",
        f"- Tag `{OUTCOME_TAG}` says how a trial ended: finished, pruned (stopped early by the scheduler; its run is "
        "FINISHED, its figures are those of the steps it ran), stopped (by the budget), failed or interrupted.",
        f"- {columns_to_add(config.metric, searched)}",
        f"- Bookkeeping (step, epoch, seconds, GPUs, the final flag) is under `{SYS_PREFIX}`, on a trial's "
        "**System metrics** tab; its **Model metrics** tab holds the figures.",
        f"- [The experiment's runs]({ui_link(tracking_uri, experiment_id)}) on MLflow's model-training view.",
    ])


def experiment_description(config: SweepConfig, sweep_name: str, searched: Sequence[str]) -> str:
    return "\n".join([
        "Sweeps of `sentsweep`: each sweep is a run (tag `sentsweep.role` = sweep) whose child runs are its trials "
        "and, when it confirms its best, a confirmation run.",
        "",
        "Use the **Model training** view (top left) to see the runs.",
        f"{columns_to_add(config.metric, searched)}",
        "",
        f"Latest sweep: `{sweep_name}`, `{config.method}` searching {', '.join(searched) or 'no parameter'} for "
        f"dev `{config.metric}`.",
    ])
