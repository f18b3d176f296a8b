"""MLflow system metrics on a trial's run: CPU, memory, disk and network (psutil), GPU utilisation and memory
when ``nvidia-ml-py`` (``pynvml``, or AMD's ``pyrsmi``) is installed and a GPU is present.

MLflow's own monitor (``SystemMetricsMonitor``) logs to MLflow directly from its thread and ends for good at the
first request MLflow does not answer: an outage of one sampling interval, or a tracking server's restart, ended a
trial's system metrics for the rest of the trial, and what it had sampled was lost. :class:`SystemMetricsSampler`
samples with MLflow's metric monitors (:func:`sentsweep._compat.mlflow.machine_monitors`; the same figures, named
``system/<name>`` as MLflow names them) in a thread of its own and hands each sample to the trial's journal
(:mod:`sentsweep.tracking.trial_logger`), which delivers it when MLflow answers, like every other point of the
trial. Each sample is logged at the step of the trial's latest report (several samples share one: the model's
loading, an evaluation; a restored attempt's samples before its first report are at step 0), so that GPU use lines
up with the training curves. Turned on by the sweep config's ``tracking.system_metrics``. Best-effort: a sampler
that cannot start (psutil missing), or a sample that fails, is a warning, never a failed trial.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sentsweep._compat.mlflow import machine_monitors

log = logging.getLogger("sentsweep.tracking")

#: MLflow's prefix of system metrics (its UI groups them by it).
PREFIX = "system/"


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
