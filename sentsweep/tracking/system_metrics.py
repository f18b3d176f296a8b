"""System metrics on a trial's run: CPU, memory, disk and network (psutil), and the memory (and, with
``nvidia-ml-py``, the utilisation) of the GPUs the trial uses (PyTorch's CUDA runtime).

:class:`SystemMetricsSampler` samples the machine in a thread of its own with :func:`machine_monitors` and hands each
sample to the trial's journal (:mod:`sentsweep.tracking.trial_logger`), which delivers it when MLflow answers, like
every other point of the trial. The figures are named ``system/<name>`` with MLflow's own names, so MLflow's UI shows
them as system metrics; each is the mean of the samples since the last one handed on. Each sample is logged at the
step of the trial's latest report (several samples share one: the model's loading, an evaluation; a restored
attempt's samples before its first report are at step 0), so that GPU use lines up with the training curves. Turned
on by the sweep config's ``tracking.system_metrics``. Best-effort: a sampler that cannot start (psutil missing), or a
sample that fails, is a warning, never a failed trial.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import defaultdict
from collections.abc import Callable

log = logging.getLogger("sentsweep.tracking")

#: MLflow's prefix of system metrics (its UI groups them by it).
PREFIX = "system/"


class Monitor:
    """Samples of some figures (:meth:`collect_metrics`), averaged by :meth:`aggregate_metrics` until cleared."""

    def __init__(self) -> None:
        self._samples: defaultdict[str, list[float]] = defaultdict(list)

    def read(self) -> dict[str, float]:
        """The figures now."""
        raise NotImplementedError

    def collect_metrics(self) -> None:
        for name, value in self.read().items():
            self._samples[name].append(float(value))

    def aggregate_metrics(self) -> dict[str, float]:
        return {name: round(sum(values) / len(values), 1) for name, values in self._samples.items() if values}

    def clear_metrics(self) -> None:
        self._samples.clear()


class PsutilMonitor(Monitor):
    """A monitor reading psutil (an ``ImportError`` when it is not installed: no system metrics)."""

    def __init__(self) -> None:
        super().__init__()
        import psutil

        self._psutil = psutil


class CpuMonitor(PsutilMonitor):
    """CPU utilisation since the last sample, and the memory in use (megabytes of 10^6 bytes, and percent)."""

    def __init__(self) -> None:
        super().__init__()
        self._psutil.cpu_percent()  # the first reading starts the interval

    def read(self) -> dict[str, float]:
        memory = self._psutil.virtual_memory()
        return {"cpu_utilization_percentage": self._psutil.cpu_percent(),
                "system_memory_usage_megabytes": memory.used / 1e6,
                "system_memory_usage_percentage": memory.used / memory.total * 100}


class DiskMonitor(PsutilMonitor):
    """The root file system's use."""

    def read(self) -> dict[str, float]:
        usage = self._psutil.disk_usage(os.sep)
        return {"disk_usage_percentage": usage.percent, "disk_usage_megabytes": usage.used / 1e6,
                "disk_available_megabytes": usage.free / 1e6}


class NetworkMonitor(PsutilMonitor):
    """Megabytes received and sent since the sampler started (the latest sample, not a mean)."""

    def __init__(self) -> None:
        super().__init__()
        start = self._psutil.net_io_counters()
        self._start = (start.bytes_recv, start.bytes_sent)

    def read(self) -> dict[str, float]:
        now = self._psutil.net_io_counters()
        return {"network_receive_megabytes": (now.bytes_recv - self._start[0]) / 1e6,
                "network_transmit_megabytes": (now.bytes_sent - self._start[1]) / 1e6}

    def collect_metrics(self) -> None:
        self._samples.clear()
        super().collect_metrics()


class GpuMonitor(Monitor):
    """The memory in use on each GPU this process sees, and its utilisation when ``nvidia-ml-py`` is installed.
    Read only once the trial itself has started CUDA: the sampler never creates a CUDA context of its own."""

    def read(self) -> dict[str, float]:
        import torch

        if not torch.cuda.is_initialized():
            return {}
        figures: dict[str, float] = {}
        for i in range(torch.cuda.device_count()):
            free, total = torch.cuda.mem_get_info(i)
            figures[f"gpu_{i}_memory_usage_megabytes"] = (total - free) / 1e6
            figures[f"gpu_{i}_memory_usage_percentage"] = (total - free) / total * 100
            with contextlib.suppress(Exception):  # no nvidia-ml-py: memory only
                figures[f"gpu_{i}_utilization_percentage"] = float(torch.cuda.utilization(i))
        return figures


def machine_monitors() -> list[Monitor]:
    """The monitors of this machine: CPU and memory, disk, network, and the GPUs the trial uses."""
    return [CpuMonitor(), DiskMonitor(), NetworkMonitor(), GpuMonitor()]


class SystemMetricsSampler:
    """A thread that samples the machine every ``interval_s`` seconds and passes each sample (``system/*`` figures)
    to ``publish``; a ``publish`` that raises loses that sample only."""

    def __init__(self, publish: Callable[[dict[str, float]], None], interval_s: float) -> None:
        self._publish = publish
        self._interval_s = interval_s
        self._monitors = machine_monitors()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sentsweep-system-metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def sample(self) -> dict[str, float]:
        """The figures since the last sample, aggregated as MLflow does (means over the interval)."""
        figures: dict[str, float] = {}
        for monitor in self._monitors:
            figures.update({PREFIX + k: float(v) for k, v in monitor.aggregate_metrics().items()})
            monitor.clear_metrics()
        return figures

    def _run(self) -> None:
        warned = False
        while True:
            try:
                for monitor in self._monitors:
                    monitor.collect_metrics()
            except Exception as exc:  # noqa: BLE001 - a monitor that failed once (a GPU library's error)
                warned = warned or _warn(f"the machine was not sampled: {type(exc).__name__}: {exc}")
            if self._stop.wait(self._interval_s):
                return
            try:
                self._publish(self.sample())
            except Exception as exc:  # noqa: BLE001 - best-effort: the next sample is tried all the same
                warned = warned or _warn(f"a system-metrics sample was not journaled: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        """Stop sampling (the sample under way is dropped)."""
        self._stop.set()
        self._thread.join(timeout=self._interval_s + 5)


def _warn(message: str) -> bool:
    """One warning of a sampler (its first failure; later ones are as likely and say nothing new)."""
    log.warning("%s (sampling goes on; this is said once)", message)
    return True


def start_system_metrics(publish: Callable[[dict[str, float]], None],
                         interval_s: float = 10.0) -> SystemMetricsSampler | None:
    """A started sampler handing its samples to ``publish``; None when it cannot start (psutil missing, ...)."""
    try:
        sampler = SystemMetricsSampler(publish, interval_s)
        sampler.start()
    except Exception as exc:  # noqa: BLE001 - best-effort
        log.warning("no system metrics: %s: %s", type(exc).__name__, exc)
        return None
    return sampler


def stop_system_metrics(sampler: SystemMetricsSampler | None) -> None:
    """Stop a sampler (None: nothing to do)."""
    if sampler is not None:
        sampler.stop()
