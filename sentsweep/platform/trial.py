"""What the platform adds around a trainable, in the trial's worker: a finished trial never trains again.

Tune restores a sweep from its last experiment snapshot, taken every few seconds. A trial that finished
after that snapshot but before the driver died is restored as unfinished, from an earlier checkpoint,
and would train its last steps again. Its MLflow child run knows better: when it is FINISHED with the
final report (``final: 1.0``), :func:`run_once` reports those final metrics to Tune again and returns,
without loading a model or a checkpoint. When MLflow does not answer, the trial simply runs (tracking is
best-effort: a trial never fails because of it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sentsweep.platform.search import FINAL_KEY


def finished_metrics(config: dict[str, Any], trial_id: str | None) -> dict[str, float] | None:
    """The final metrics of this trial's child run when it already finished, else None."""
    tracking = config.get("tracking")
    if not tracking or not trial_id:
        return None
    from mlflow import MlflowClient

    from sentsweep.tracking.replay import Reachability
    from sentsweep.tracking.vocabulary import find_trial_run

    if not Reachability.of(tracking["tracking_uri"]).worth_trying():
        return None
    client = MlflowClient(tracking_uri=tracking["tracking_uri"])
    try:
        run = find_trial_run(client, tracking["experiment_id"], tracking.get("parent_run_id"), trial_id)
    except Exception as exc:  # unreachable: train (the trial's logger journals until MLflow answers)
        Reachability.of(tracking["tracking_uri"]).failed(exc)
        return None
    if run is None or run.info.status != "FINISHED" or run.data.metrics.get(FINAL_KEY) != 1.0:
        return None
    return {**run.data.metrics, "restored_from_mlflow": 1.0}


def run_once(function: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``function`` as a Tune trainable that skips trials whose child run already finished."""

    @functools.wraps(function)
    def trainable(config: dict[str, Any]) -> None:
        from ray import tune

        done = finished_metrics(config, tune.get_context().get_trial_id())
        if done is not None:
            tune.report(done)
            return
        function(config)

    return trainable
