"""System metrics sampled in the trial: the figures psutil gives, at most one sample per interval."""

from __future__ import annotations

from sentsweep.trainables.system_metrics import PREFIX, SystemMetrics, sample_machine


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
