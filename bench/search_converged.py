"""Which sampler, and when to stop: the sweep's samplers and ``stop_when: converged`` replayed on a recorded table.

Per sampler (``searcher: tpe | gp | random``, the paper's defaults first as every sweep runs them, with and without
ASHA), over seeds 0 .. repeats-1, one trial at a time (:func:`bench.search_replay.replay`):

- the trial-seconds to come within one noise sd of the table's best (the median and the central 95% of the seeds,
  their 2.5th and 97.5th percentiles; a seed that never got there within the cap of 2x the grid's trial-seconds
  counts as infinite), and the ratio of the median to random search's (no ASHA) with its paired bootstrap interval;
- a fixed budget of ``num_samples`` trials (default: as many as the table has points) against the same sweep with
  ``stop_when: converged`` (``num_samples`` its upper limit; the noise sd given, as ``convergence.noise_sd``): the
  share of the fixed budget's trial-seconds saved (per seed, then the median and mean), the final regret (the
  table's best minus the best dev value any report showed), the share of seeds whose regret is within one
  noise sd, and the share whose best is within one noise sd of the same seed's fixed budget (what stopping cost);
- what any stop rule could save (:func:`bound_rows`): an oracle that knows the table's best stops each seed at the
  first trial that came within one noise sd of it, and the smallest trial count shared by all seeds that keeps
  90% of them within the noise. A stop rule never beats the fixed budget's share within the noise (it runs a
  prefix of the same trials), and it cannot know when it got there, so the oracle's saving is its ceiling.

The fixed budget's figures are read off the capped replay: at one trial at a time, a sweep of ``num_samples``
trials is the capped replay's first ``num_samples`` trials (the convergence check draws no number from the
sampler's generator, so the converged replay is a prefix of the same sequence too).

    python -m bench.search_converged --table bench/data/cosent_grid_100steps.csv --noise-sd 0.2 [--repeats 100]
        [--samplers tpe,gp,random] [--min-trials 10] [--num-samples 32] [--only lr=...]
        [--evaluators stagnation,regret_bound,emmr] [--patience 20]
    # --noise-sd defaults to the table's own, from its seeds
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bench.search_grid import GridTable, read_table
from bench.search_replay import ReplaySpace, SearchSettings, Strategy, Trace, replay
from bench.search_summary import paired_ratio_interval, ratio_cell

#: The reference of the ratios.
REFERENCE = "random"


def interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The lower end, the median and the upper end of the central ``level`` share of ``values`` (inf-safe: each is
    one of the values)."""
    low, mid, high = np.quantile(np.asarray(values, dtype=float), [(1 - level) / 2, 0.5, (1 + level) / 2],
                                 method="inverted_cdf")
    return float(low), float(mid), float(high)


def prefix(trace: Trace, table: GridTable, trials: int) -> tuple[float, float]:
    """Trial-seconds and the incumbent of the first ``trials`` trials of a one-at-a-time replay."""
    spent, best = 0.0, -math.inf
    for config, reports in trace.runs[:trials]:
        curve = table.curves[config]
        spent += curve.seconds[max(reports, 1) - 1]
        best = max(best, *curve.values[:max(reports, 1)])
    return spent, best


@dataclass(frozen=True)
class SamplerFigures:
    """One strategy's figures over the seeds."""

    name: str
    to_target: tuple[float, ...]  # trial-seconds to within the noise of the best, per seed (inf: never)
    fixed_spent: tuple[float, ...]
    fixed_regret: tuple[float, ...]
    converged_spent: tuple[float, ...]
    converged_regret: tuple[float, ...]
    converged_trials: tuple[int, ...]
    converged_by_check: tuple[bool, ...]  # whether the terminator ended it (else num_samples did)
    seconds: float  # the replays' own time
    #: per seed, the trial-seconds and the incumbent after each of the fixed budget's first trials
    prefixes: tuple[tuple[tuple[float, float], ...], ...] = ()

    def saved(self) -> np.ndarray:
        return 1 - np.asarray(self.converged_spent) / np.asarray(self.fixed_spent)

    def within_at(self, trials: int, target: float) -> np.ndarray:
        """Per seed, whether the first ``trials`` trials came within the noise (reached ``target``)."""
        return np.asarray([p[min(trials, len(p)) - 1][1] >= target - 1e-9 for p in self.prefixes])

    def oracle_saved(self, target: float) -> np.ndarray:
        """Per seed, the share of the fixed budget saved by stopping at the first trial that reached ``target``
        (nothing saved for a seed that never did)."""
        saved = []
        for steps in self.prefixes:
            hit = next((spent for spent, best in steps if best >= target - 1e-9), steps[-1][0])
            saved.append(1 - hit / steps[-1][0])
        return np.asarray(saved)

    def common_stop(self, target: float, share: float = 0.9) -> tuple[int, np.ndarray] | None:
        """The smallest trial count at which at least ``share`` of the seeds reached ``target``, and per seed the
        share of the fixed budget it saves; None when the fixed budget itself keeps fewer."""
        for trials in range(1, max(len(p) for p in self.prefixes) + 1):
            if self.within_at(trials, target).mean() >= share:
                return trials, np.asarray([1 - p[min(trials, len(p)) - 1][0] / p[-1][0] for p in self.prefixes])
        return None


def measure(table: GridTable, strategy: Strategy, *, repeats: int, noise_sd: float, num_samples: int,
            settings: SearchSettings, cap_s: float, space: ReplaySpace, to_target_only: bool = False) -> SamplerFigures:
    """``repeats`` seeds of ``strategy``: a capped replay (to target, and the fixed budget's prefix) and a converged
    one (its improvement evaluator ``settings.evaluator``); with ``to_target_only``, only the capped replay up to the
    target."""
    started = time.process_time()
    target = table.best - noise_sd
    converged_settings = SearchSettings(**{**settings.__dict__, "noise_sd": noise_sd})
    name = strategy.name if settings.evaluator == SearchSettings.evaluator else f"{strategy.name}, {settings.evaluator}"
    rows, prefixes = [], []
    for seed in range(repeats):
        if to_target_only:
            capped = replay(table, strategy, seed, cap_s=cap_s, settings=settings, space=space, stop_at=target)
            rows.append((capped.seconds_to(target), math.nan, math.nan, math.nan, math.nan, 0, False))
            continue
        capped = replay(table, strategy, seed, cap_s=cap_s, settings=settings, space=space)
        fixed_spent, fixed_best = prefix(capped, table, num_samples)
        prefixes.append(tuple(prefix(capped, table, k) for k in range(1, min(num_samples, len(capped.runs)) + 1)))
        stopped = replay(table, strategy, seed, cap_s=cap_s, settings=converged_settings, space=space,
                         num_samples=num_samples)
        rows.append((capped.seconds_to(target), fixed_spent, table.best - fixed_best, stopped.spent[-1],
                     table.best - stopped.incumbent[-1], stopped.trials, stopped.finished_by_searcher))
    columns = list(zip(*rows, strict=True))
    return SamplerFigures(name, *(tuple(c) for c in columns), time.process_time() - started, tuple(prefixes))


def _seconds(value: float) -> str:
    return f"{value:.0f}" if math.isfinite(value) else "inf"


def sampler_rows(figures: Sequence[SamplerFigures]) -> list[list[str]]:
    """Trial-seconds to target, median [central 95% of the seeds], seeds reaching it, ratio of medians to random's
    [95% paired bootstrap interval: seed ``i`` of both replayed with ``seed=i``]."""
    ref = next((f for f in figures if f.name == REFERENCE), None)
    rows = []
    for f in figures:
        low, mid, high = interval(f.to_target)
        base = interval(ref.to_target)[1] if ref is not None else math.nan
        ratio = f"{mid / base:.2f}x" if math.isfinite(mid) and math.isfinite(base) and base > 0 else "n/a"
        paired = paired_ratio_interval(f.to_target, ref.to_target) if ref is not None and f is not ref else None
        if paired is not None and ratio != "n/a":
            ratio += " [" + ", ".join(ratio_cell(v) for v in paired) + "]"
        reached = np.mean([math.isfinite(v) for v in f.to_target])
        rows.append([f.name, f"{_seconds(mid)} [{_seconds(low)}, {_seconds(high)}]", f"{reached:.0%}", ratio])
    return rows


def converged_rows(figures: Sequence[SamplerFigures], noise_sd: float) -> list[list[str]]:
    """Per strategy: the fixed budget's trial-seconds and regret, the converged sweep's trials, the share of
    trial-seconds saved (median, mean), its regret and the share of seeds within one noise sd (fixed budget's
    share alongside)."""
    rows = []
    for f in figures:
        saved = f.saved()
        fixed_low, fixed_mid, fixed_high = interval(f.fixed_regret)
        low, mid, high = interval(f.converged_regret)
        within = np.mean(np.asarray(f.converged_regret) <= noise_sd + 1e-9)
        fixed_within = np.mean(np.asarray(f.fixed_regret) <= noise_sd + 1e-9)
        # what stopping cost against the same seed's fixed budget: its best minus the stopped sweep's best
        kept = np.mean(np.asarray(f.converged_regret) - np.asarray(f.fixed_regret) <= noise_sd + 1e-9)
        rows.append([f.name, f"{np.median(f.fixed_spent):.0f}", f"{np.median(f.converged_trials):.0f}",
                     f"{np.mean(f.converged_by_check):.0%}", f"{np.median(saved):.0%} / {np.mean(saved):.0%}",
                     f"{fixed_mid:.2f} [{fixed_low:.2f}, {fixed_high:.2f}]", f"{mid:.2f} [{low:.2f}, {high:.2f}]",
                     f"{within:.0%} (fixed: {fixed_within:.0%})", f"{kept:.0%}"])
    return rows


def bound_rows(figures: Sequence[SamplerFigures], target: float) -> list[list[str]]:
    """Per strategy: the fixed budget's share of seeds within the noise, what the oracle saves (median / mean),
    and the smallest shared trial count keeping 90% of the seeds within the noise with what it saves."""
    rows = []
    for f in figures:
        oracle = f.oracle_saved(target)
        common = f.common_stop(target)
        shared = (f"{common[0]} trials: {np.median(common[1]):.0%} / {np.mean(common[1]):.0%}" if common
                  else "none: the fixed budget keeps fewer than 90%")
        rows.append([f.name, f"{f.within_at(max(map(len, f.prefixes)), target).mean():.0%}",
                     f"{np.median(oracle):.0%} / {np.mean(oracle):.0%}", shared])
    return rows


BOUND_HEADER = ["strategy", "fixed budget: seeds within the noise", "oracle: trial-s saved, median / mean",
                "one trial count for all seeds, 90% within the noise: saved median / mean"]
SAMPLER_HEADER = ["strategy", "trial-s to within the noise: median [2.5%, 97.5% of the seeds]", "seeds reaching it",
                  "ratio to random [95% paired bootstrap]"]
CONVERGED_HEADER = ["strategy", "fixed budget trial-s (median)", "converged: trials (median)",
                    "ended by the terminator", "trial-s saved: median / mean",
                    "fixed: regret median [2.5%, 97.5% of the seeds]", "converged: regret median [2.5%, 97.5%]",
                    "regret <= noise sd", "within noise sd of the fixed budget"]


def strategies(samplers: Sequence[str]) -> list[Strategy]:
    """Each sampler with ASHA and without, the paper's defaults first."""
    return [Strategy(f"{s} + ASHA" if asha else s, s, asha, True) for s in samplers for asha in (True, False)]


def main(argv: list[str] | None = None) -> None:
    import optuna

    from bench.common import print_table

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", type=Path, required=True)
    parser.add_argument("--noise-sd", type=float, default=None, help="the metric's seed-to-seed sd on this table "
                        "(default: measured from the table's seeds)")
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--samplers", default="tpe,random", help="comma-separated: tpe, gp, random")
    parser.add_argument("--min-trials", type=int, default=SearchSettings().min_trials)
    parser.add_argument("--evaluators", default=SearchSettings.evaluator,
                        help="comma-separated: stagnation, regret_bound, emmr")
    parser.add_argument("--patience", type=int, default=SearchSettings.patience, help="the stagnation rule's")
    parser.add_argument("--num-samples", type=int, default=None, help="the fixed budget (default: the table's size)")
    parser.add_argument("--cap", type=float, default=2.0, help="share of the grid's trial-seconds per capped replay")
    parser.add_argument("--only", action="append", default=[], metavar="SETTING=V1,V2")
    parser.add_argument("--to-target-only", action="store_true",
                        help="only the trial-seconds to the target (each replay stops there): the first table")
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    table = read_table(args.table, "cpu_seconds")
    for only in args.only:
        name, _, values = only.partition("=")
        table = table.restricted(name, values.split(","))
    space = ReplaySpace.for_table(table)
    noise_sd = args.noise_sd if args.noise_sd is not None else table.noise_sd()
    if noise_sd is None:
        raise SystemExit(f"{args.table}: no configuration has a second seed: give --noise-sd")
    full = sum(c.seconds[-1] for c in table.curves.values())
    num_samples = args.num_samples or len(table.curves)
    figures = []
    for evaluator in args.evaluators.split(","):
        settings = SearchSettings(min_trials=args.min_trials, evaluator=evaluator, patience=args.patience)
        for strategy in strategies(args.samplers.split(",")):
            figures.append(measure(table, strategy, repeats=args.repeats, noise_sd=noise_sd,
                                   num_samples=num_samples, settings=settings, cap_s=args.cap * full, space=space,
                                   to_target_only=args.to_target_only))
            print(f"{figures[-1].name}: {figures[-1].seconds:.0f} CPU-s", file=sys.stderr, flush=True)
    source = "given" if args.noise_sd is not None else f"measured from {len(table.replicas)} points' seeds"
    print(f"table {args.table}: {len(table.curves)} points, best {table.best:.2f}, noise sd {noise_sd:.3f} ({source}), "
          f"target {table.best - noise_sd:.2f}; {args.repeats} seeds; fixed budget {num_samples} trials; converged: "
          f"min_trials {args.min_trials}, patience {args.patience} (stagnation); cap {args.cap * full:.0f} trial-s; "
          f"space: {space.space or 'the table grid'}")
    # the sampler and bound tables do not depend on the evaluator: the first evaluator's figures, by strategy
    first = [replace(f, name=f.name.split(", ")[0]) for f in figures[:len(strategies(args.samplers.split(",")))]]
    print_table("Trial-seconds to within the noise of the best", SAMPLER_HEADER, sampler_rows(first))
    if args.to_target_only:
        return
    print_table("stop_when: converged against the fixed budget", CONVERGED_HEADER, converged_rows(figures, noise_sd))
    print_table("What any stop rule could save", BOUND_HEADER, bound_rows(first, table.best - noise_sd))


if __name__ == "__main__":
    main()
