"""MLflow system metrics on a trial's run: CPU, memory, disk and network (psutil), GPU utilisation and memory
when ``nvidia-ml-py`` (``pynvml``) is installed and a GPU is present.

The trial's run is opened through a client, not ``mlflow.start_run``, so MLflow's switch
(``mlflow.enable_system_metrics_logging``, ``start_run(log_system_metrics=True)``) would not reach it: the trial
starts MLflow's own monitor (:class:`mlflow.system_metrics.system_metrics_monitor.SystemMetricsMonitor`) on its
run instead, a thread that logs ``system/*`` metrics every ``interval_s`` seconds until the run ends. Turned on by
the sweep config's ``tracking.system_metrics``. Best-effort, like all tracking: a monitor that cannot start is a
warning, never a failed trial.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("sentsweep.tracking")


def start_system_metrics(run_id: str, tracking_uri: str, interval_s: float = 10.0) -> Any | None:
    """A started monitor logging system metrics to ``run_id`` (continuing its ``system/*`` steps after a
    restore); None when it cannot start (psutil missing, ...)."""
    try:
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        monitor = SystemMetricsMonitor(run_id, sampling_interval=interval_s, resume_logging=True,
                                       tracking_uri=tracking_uri)
        monitor.start()
    except Exception as exc:  # best-effort
        log.warning("no system metrics for run %s: %s: %s", run_id, type(exc).__name__, exc)
        return None
    return monitor


def stop_system_metrics(monitor: Any | None) -> None:
    """Stop a monitor and flush what it collected (None: nothing to do)."""
    if monitor is None:
        return
    try:
        monitor.finish()
    except Exception as exc:  # best-effort
        log.warning("system metrics monitor did not stop cleanly: %s: %s", type(exc).__name__, exc)
