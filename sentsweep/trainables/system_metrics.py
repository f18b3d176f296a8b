"""System metrics sampled inside a trial and reported with its results (``system/*`` keys, as MLflow names them).

Turned on by the sweep config's ``tracking.system_metrics``. A sample is taken at a report when at least
``interval_s`` seconds passed since the last one, so it costs a few system calls per report and no thread. The
driver logs the figures on the trial's run at the report's step (:mod:`sentsweep.platform.tracking.trial_runs`), so that
memory lines up with the training curves. Best-effort: a figure that cannot be read is left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sentsweep.tracking.names import SYS_PREFIX


def sample_machine() -> dict[str, float]:
    """CPU use of the machine (percent since the last call), this process's resident memory, the machine's memory
    in use, and the memory torch holds on each CUDA device and its peak since the trial started (when CUDA is
    present)."""
    figures: dict[str, float] = {}
    try:
        import psutil

        memory = psutil.virtual_memory()
        figures.update({
            f"{SYS_PREFIX}cpu_utilization_percentage": float(psutil.cpu_percent(interval=None)),
            f"{SYS_PREFIX}system_memory_usage_megabytes": (memory.total - memory.available) / 2**20,
            f"{SYS_PREFIX}system_memory_usage_percentage": float(memory.percent),
            f"{SYS_PREFIX}process_rss_megabytes": psutil.Process().memory_info().rss / 2**20,
        })
    except Exception:  # noqa: BLE001 - no psutil, or a platform without these figures
        pass
    try:
        import torch

        if torch.cuda.is_available():
            for index in range(torch.cuda.device_count()):
                figures[f"{SYS_PREFIX}gpu_{index}_memory_usage_megabytes"] = torch.cuda.memory_reserved(index) / 2**20
                figures[f"{SYS_PREFIX}gpu_{index}_max_memory_allocated_megabytes"] = (
                    torch.cuda.max_memory_allocated(index) / 2**20)
    except Exception:  # noqa: BLE001 - a CUDA that cannot be queried
        pass
    return figures


def start_machine_sampling() -> None:
    """At a trial's start: the first CPU figure counts from here, and each CUDA device's peak memory is the trial's
    own (a reused worker process ran other trials before, whose peak torch would otherwise still report)."""
    try:
        import psutil

        psutil.cpu_percent(interval=None)
    except Exception:  # noqa: BLE001 - no psutil
        pass
    try:
        import torch

        if torch.cuda.is_initialized():  # else no trial of this process used CUDA yet, and none is started here
            for index in range(torch.cuda.device_count()):
                torch.cuda.reset_peak_memory_stats(index)
    except Exception:  # noqa: BLE001 - a CUDA that cannot be queried
        pass


class SystemMetrics:
    """Samples for a trial's reports: :meth:`due` returns a sample at most every ``interval_s`` seconds, else ``{}``
    (``clock``, ``sample`` and ``start`` injected in tests). ``start`` runs once, when the trial's sampling begins."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic,
                 sample: Callable[[], dict[str, float]] = sample_machine,
                 start: Callable[[], None] = start_machine_sampling) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.sample = sample
        self.last: float | None = None
        start()

    def due(self) -> dict[str, float]:
        now = self.clock()
        if self.last is not None and now - self.last < self.interval_s:
            return {}
        self.last = now
        return self.sample()
