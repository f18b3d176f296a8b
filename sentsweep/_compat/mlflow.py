"""MLflow's names outside its public API, each behind one function (see :mod:`sentsweep._compat`).

- ``mlflow.system_metrics.metrics.*``: the metric monitors behind MLflow's system metrics (``CPUMonitor``,
  ``DiskMonitor``, ``NetworkMonitor``, ``GPUMonitor``, ``ROCMMonitor``), which MLflow documents only through
  ``mlflow.enable_system_metrics_logging``; :func:`machine_monitors` builds them for
  :mod:`sentsweep.tracking.system_metrics`.
"""

from __future__ import annotations

from typing import Any


def machine_monitors() -> list[Any]:
    """MLflow's monitors of this machine: CPU and memory, disk, network, and the GPUs when a GPU library sees one.
    Each has ``collect_metrics()``, ``aggregate_metrics()`` (name to mean since the last clear) and
    ``clear_metrics()``."""
    from mlflow.system_metrics.metrics.cpu_monitor import CPUMonitor
    from mlflow.system_metrics.metrics.disk_monitor import DiskMonitor
    from mlflow.system_metrics.metrics.gpu_monitor import GPUMonitor
    from mlflow.system_metrics.metrics.network_monitor import NetworkMonitor
    from mlflow.system_metrics.metrics.rocm_monitor import ROCMMonitor

    monitors: list[Any] = [CPUMonitor(), DiskMonitor(), NetworkMonitor()]
    for gpu in (GPUMonitor, ROCMMonitor):
        try:
            monitors.append(gpu())
            break
        except Exception:  # noqa: BLE001 - no such GPU, or no library for it
            continue
    return monitors
