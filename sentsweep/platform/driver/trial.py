"""What the platform adds around a trainable, in the trial's worker: a finished trial never trains again.

Tune restores a sweep from its last experiment snapshot, taken every few seconds. A trial that finished
after that snapshot but before the driver died is restored as unfinished, from an earlier checkpoint,
and would train its last steps again. Its folder knows better: a finished attempt wrote its final metrics
(``final: 1.0``) to ``output/final_metrics.json`` before its final report, so :func:`run_once` reports those
metrics to Tune again and returns, without loading a model or a checkpoint (``restored_from_mlflow``: 1, so
that the budget counts nothing for it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sentsweep.platform.results import FINAL_KEY
from sentsweep.tracking.vocabulary import OUTPUT_DIR
from sentsweep.trainables.checkpoints import StoredFolder


def finished_metrics(trial: StoredFolder) -> dict[str, float] | None:
    """The final metrics a finished attempt of this trial wrote to its folder (``output/final_metrics.json``,
    written just before its final report), else None."""
    final = trial.child(OUTPUT_DIR).read_json("final_metrics.json")
    if not final or final.get(FINAL_KEY) != 1.0:
        return None
    return {**final, "restored_from_mlflow": 1.0}


def run_once(function: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``function`` as a Tune trainable that skips trials whose child run already finished."""

    @functools.wraps(function)
    def trainable(config: dict[str, Any]) -> None:
        from ray import tune

        from sentsweep.trainables.tune_checkpoints import trial_folder

        done = finished_metrics(trial_folder())
        if done is not None:
            tune.report(done)
            return
        function(config)

    return trainable
