"""System metrics sampled in the trial: the figures psutil gives, at most one sample per interval."""

from __future__ import annotations

from sentsweep.tracking.names import SYS_PREFIX as PREFIX
from sentsweep.trainables.system_metrics import SystemMetrics, sample_machine, start_machine_sampling


def test_a_sample_of_this_machine_has_cpu_and_memory_figures() -> None:
    figures = sample_machine()
    assert {f"{PREFIX}cpu_utilization_percentage", f"{PREFIX}process_rss_megabytes"} <= set(figures)
    assert figures[f"{PREFIX}process_rss_megabytes"] > 0
    assert all(isinstance(v, float) for v in figures.values())


def test_at_most_one_sample_per_interval() -> None:
    now = [0.0]
    taken: list[float] = []

    def sample() -> dict[str, float]:
        taken.append(now[0])
        return {f"{PREFIX}x": now[0]}

    metrics = SystemMetrics(10.0, clock=lambda: now[0], sample=sample)
    seen = []
    for t in (0.0, 4.0, 9.9, 10.0, 15.0, 21.0):
        now[0] = t
        seen.append(metrics.due())
    assert taken == [0.0, 10.0, 21.0]
    assert [bool(s) for s in seen] == [True, False, False, True, False, True]


def test_each_trial_in_a_reused_worker_reports_its_own_gpu_peak() -> None:
    """torch's peak memory lasts as long as the process: the second trial of a reused worker starts its own."""
    key = f"{PREFIX}gpu_0_max_memory_allocated_megabytes"
    peak = [0.0]

    def sample() -> dict[str, float]:
        return {key: peak[0]}

    def start() -> None:
        peak[0] = 0.0

    first = SystemMetrics(10.0, clock=lambda: 0.0, sample=sample, start=start)
    peak[0] = 900.0  # the first trial's large batch
    assert first.due() == {key: 900.0}
    second = SystemMetrics(10.0, clock=lambda: 0.0, sample=sample, start=start)
    peak[0] = max(peak[0], 300.0)
    assert second.due() == {key: 300.0}


def test_the_start_of_sampling_runs_on_this_machine() -> None:
    start_machine_sampling()
    assert sample_machine()[f"{PREFIX}process_rss_megabytes"] > 0
