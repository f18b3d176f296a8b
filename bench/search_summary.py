"""Repeat the replays (:mod:`bench.search_replay`) over seeds and summarise them per strategy.

Per strategy and concurrency: the trial-seconds needed to come within ``tolerance`` of the table's best (median and
quartiles over the seeds; a seed that never got there within the cap counts as infinite), the share of seeds that
got there, the regret (table's best minus the incumbent) after a fixed budget of trial-seconds, and the ratio of
the median trial-seconds to random search's at the same concurrency, measured in the same run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bench.search_grid import GridTable
from bench.search_replay import ReplaySpace, SearchSettings, Strategy, Trace, replay

#: The reference every ratio is taken against.
REFERENCE = "random"


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """Lower quartile, median, upper quartile; inf-safe (each is one of the values: no interpolation)."""
    q1, q2, q3 = np.quantile(np.asarray(values, dtype=float), [0.25, 0.5, 0.75], method="inverted_cdf")
    return float(q1), float(q2), float(q3)


@dataclass(frozen=True)
class Summary:
    strategy: str
    concurrency: int
    to_target: tuple[float, float, float]  # trial-seconds: q1, median, q3
    wall_to_target: float  # median wall seconds
    reached: float  # share of seeds that reached the target within the cap
    regret: tuple[float, float, float]  # after the budget: q1, median, q3
    trials: float  # mean trials started
    cap_s: float = math.inf  # the trial-seconds each replay was stopped at
    per_seed: tuple[float, ...] = ()  # trial-seconds to target of each seed (inf: never reached)


def summarise(strategy: Strategy, concurrency: int, traces: Sequence[Trace], table: GridTable, tolerance: float,
              budget_s: float, cap_s: float = math.inf) -> Summary:
    target = table.best - tolerance
    to_target = [t.seconds_to(target) for t in traces]
    regret = [table.best - t.best_within(budget_s) for t in traces]
    return Summary(strategy.name, concurrency, quartiles(to_target),
                   quartiles([t.seconds_to(target, wall=True) for t in traces])[1],
                   float(np.mean([math.isfinite(v) for v in to_target])), quartiles(regret),
                   float(np.mean([t.trials for t in traces])), cap_s, tuple(to_target))


def run_all(table: GridTable, strategies: Sequence[Strategy], *, repeats: int, concurrencies: Sequence[int],
            cap_s: float, budget_s: float, tolerance: float, settings: SearchSettings = SearchSettings(),
            log: Callable[[str], None] = lambda message: None) -> list[Summary]:
    """Every strategy at every concurrency, ``repeats`` seeds each (seeds 0 .. repeats-1)."""
    space = ReplaySpace.for_table(table)
    summaries = []
    for concurrency in concurrencies:
        for strategy in strategies:
            traces = [replay(table, strategy, seed, cap_s=cap_s, concurrency=concurrency, settings=settings,
                             space=space) for seed in range(repeats)]
            summaries.append(summarise(strategy, concurrency, traces, table, tolerance, budget_s, cap_s))
            log(f"{strategy.name} at concurrency {concurrency}: done")
    return summaries


def reference_of(summary: Summary, summaries: Sequence[Summary]) -> Summary | None:
    """Random search's summary at ``summary``'s concurrency (None when it was not replayed)."""
    return next((s for s in summaries if s.strategy == REFERENCE and s.concurrency == summary.concurrency), None)


def ratio_to_reference(summary: Summary, summaries: Sequence[Summary]) -> float:
    """Median trial-seconds to target over random search's at the same concurrency (nan without it)."""
    ref = reference_of(summary, summaries)
    if ref is None or not math.isfinite(ref.to_target[1]) or ref.to_target[1] == 0:
        return math.nan
    return summary.to_target[1] / ref.to_target[1]


def _median(values: np.ndarray) -> np.ndarray:
    """Medians along the last axis as :func:`quartiles` takes them (one of the values, inf-safe)."""
    return np.quantile(values, 0.5, axis=-1, method="inverted_cdf")


def ratio_interval(summary: Summary, summaries: Sequence[Summary], resamples: int = 2000,
                   level: float = 0.95) -> tuple[float, float] | None:
    """A percentile bootstrap interval of the ratio of medians to random search's; ``None`` without per-seed figures.

    The seeds are resampled with replacement, the same draw for both strategies when they ran the same seeds
    (a paired bootstrap: seed ``i`` of either is replayed with ``seed=i``), each on its own otherwise. A resample
    whose median is inf (most of its seeds never reached the target) gives an infinite ratio, or 0 where only
    random's is; one where both are is left out (no ratio), so an end may be inf or 0."""
    ref = reference_of(summary, summaries)
    if ref is None:
        return None
    return paired_ratio_interval(summary.per_seed, ref.per_seed, resamples, level)


def paired_ratio_interval(per_seed: Sequence[float], reference: Sequence[float], resamples: int = 2000,
                          level: float = 0.95) -> tuple[float, float] | None:
    """:func:`ratio_interval` on the per-seed trial-seconds of a strategy and of the reference (None without)."""
    if not len(per_seed) or not len(reference):
        return None
    rng = np.random.default_rng(0)
    own, base = np.asarray(per_seed, dtype=float), np.asarray(reference, dtype=float)
    draw = rng.integers(0, len(own), (resamples, len(own)))
    top = _median(own[draw])
    bottom = _median(base[draw if len(base) == len(own) else rng.integers(0, len(base), (resamples, len(base)))])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratios = np.where(np.isinf(top) & np.isinf(bottom), np.nan, top / bottom)
    ratios = ratios[~np.isnan(ratios)]
    if not len(ratios):
        return None
    low, high = np.quantile(ratios, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(low), float(high)


def ratio_cell(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else "inf"


def ratio_text(summary: Summary, summaries: Sequence[Summary]) -> str:
    """The ratio to random search; where random's median never reached the target within the cap, the bound
    ``< own median / cap`` (random's median is beyond the cap)."""
    ratio = ratio_to_reference(summary, summaries)
    if math.isfinite(ratio):
        interval = ratio_interval(summary, summaries) if summary.strategy != REFERENCE else None
        return f"{ratio:.2f}x" + (f" [{ratio_cell(interval[0])}, {ratio_cell(interval[1])}]" if interval else "")
    ref = reference_of(summary, summaries)
    own = summary.to_target[1]
    if ref is not None and math.isinf(ref.to_target[1]) and math.isfinite(own) and math.isfinite(summary.cap_s):
        return f"< {own / summary.cap_s:.2f}x (random: > cap)"
    return "n/a"


def _fmt(values: tuple[float, float, float]) -> str:
    q1, median, q3 = (f"{v:.0f}" if math.isfinite(v) else "inf" for v in values)
    return f"{median} [{q1}, {q3}]"


def table_rows(summaries: Sequence[Summary]) -> list[list[str]]:
    """One markdown row per summary."""
    rows = []
    for s in summaries:
        wall = f"{s.wall_to_target:.0f}" if math.isfinite(s.wall_to_target) else "inf"
        q1, median, q3 = s.regret
        rows.append([s.strategy, str(s.concurrency), _fmt(s.to_target), wall, f"{s.reached:.0%}",
                     f"{median:.2f} [{q1:.2f}, {q3:.2f}]" if math.isfinite(median) else "no report yet",
                     f"{s.trials:.1f}",
                     ratio_text(s, summaries)])
    return rows


HEADER = ["strategy", "concurrency", "trial-s to target: median [q1, q3]", "wall-s to target (median)",
          "seeds reaching it", "regret after budget: median [q1, q3]", "trials (mean)",
          "ratio to random [95% bootstrap]"]
