"""Helpers shared by the benchmarks: timing with warm-up, paired timing and a markdown result table."""

from __future__ import annotations

import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any


def exit_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl+C: ``finally`` blocks and exit-time finalizers run, so a stopped bench stops what it
    started and leaves no temporary folder behind (a :class:`~sentsweep.trainables.loop.TrainingLoop`'s work folder;
    the default SIGTERM ends the process without either)."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(f"stopped by signal {signum}"))


def best_of(fn: Callable[[], Any], repeats: int = 3, warmup: int = 1) -> float:
    """Median wall seconds of ``repeats`` calls after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    return statistics.median(_seconds(fn) for _ in range(repeats))


def paired(
    fn: Callable[[], Any], other: Callable[[], Any], repeats: int = 3, warmup: int = 1
) -> tuple[float, float, float]:
    """Time ``fn`` and ``other`` alternately (``repeats`` pairs after ``warmup`` of each): the medians of both and
    the median of the per-pair ratios ``other / fn``, which a shared machine's load disturbs less than the ratio
    of two medians taken minutes apart."""
    for _ in range(warmup):
        fn()
        other()
    pairs = []
    for _ in range(repeats):
        pairs.append((_seconds(fn), _seconds(other)))
    a, b = zip(*pairs, strict=True)
    return statistics.median(a), statistics.median(b), statistics.median(y / x for x, y in pairs)


def _seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def load_note() -> str:
    """The machine's load (1, 5 and 15-minute averages) against its cores: on a shared machine only the
    ratios measured in the same run mean something, and the load says how much the seconds are worth."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores"


def print_table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    """A markdown table, ready to paste into docs/benchmarks.md, with the machine's load when it was printed."""
    print(f"\n### {title}\n\n{load_note()}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(f"{c:.3f}" if isinstance(c, float) else str(c) for c in row) + " |")
