"""The figures of the confirmation stage: each configuration's seeds summarised, and the winner chosen by a rule.

A configuration the search ranked among its best is re-run with further seeds (:mod:`.stage`); its
further seeds' values ``x_1..x_n`` of the sweep's metric give

- the mean ``m = sum(x_i) / n`` and the sample standard deviation ``s`` (``n - 1`` in the denominator);
- the 95% interval of the mean from Student's t distribution: ``m +- t(0.975, n - 1) * s / sqrt(n)``
  (undefined, so infinitely wide, for one seed).

The search's own run is left out of these figures: the configuration was selected *because* that run scored
high, so counting it again would inflate the mean and widen the interval (the winner's curse). It is kept apart
(:attr:`Candidate.search_run`, the ``search`` figures of the stage's tables).

The winner is chosen by the declared rule (``confirm.rule``): ``mean``, the best mean; or ``lower_bound``
(the default), the best pessimistic end of the interval: its lower end when the metric is maximised, its upper
end when it is minimised. Ties go to the better mean, then to the configuration the search ranked higher; with
one finished further seed the interval is infinite, so ``lower_bound`` ranks such candidates below any with an
interval and, among themselves (``confirm.seeds: 1``), by their mean. The weights the sweep then evaluates and
exports are the winner's further seed whose value is closest to the mean of its further seeds (not its luckiest
one); the search's run only when none of its further seeds finished.

No Ray and no MLflow here: these are plain numbers, unit-tested on their own, and the stage's names (which
:mod:`..report.compare` reads back without importing Ray).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Rule = Literal["mean", "lower_bound"]

#: The stage's state in the sweep folder.
STATE_FILE = "confirmation.json"
#: The stage's Tune experiment, inside the sweep folder.
STAGE_DIR = "confirmation"
#: On each confirmation trial's run: the search trial it confirms, and that trial's rank in the search.
CONFIRMS_TAG = "sentsweep.confirms_trial"
CONFIRM_RANK_TAG = "sentsweep.confirm_rank"
#: On the sweep's run: the search's own best trial, and whether the confirmed winner is another configuration.
SEARCH_BEST_TAG = "sentsweep.search_best_trial_id"
#: The confidence level of the interval.
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A configuration's seeds summarised: count, mean, standard deviation, the 95% interval of the mean."""

    n: int
    mean: float
    std: float
    low: float
    high: float

    def pessimistic(self, mode: str) -> float:
        """The end of the interval a cautious reader assumes: ``low`` when maximising, ``high`` when minimising."""
        return self.low if mode == "max" else self.high

    def describe(self, digits: int = 2) -> str:
        if self.n == 0:
            return "no finished seed"
        if self.n < 2:
            return f"{self.mean:.{digits}f} (1 seed)"
        return (f"{self.mean:.{digits}f} +- {self.high - self.mean:.{digits}f} "
                f"[{self.low:.{digits}f}, {self.high:.{digits}f}] (n={self.n}, sd {self.std:.{digits}f})")


def t_quantile(level: float, dof: int) -> float:
    """The two-sided ``level`` quantile of Student's t with ``dof`` degrees of freedom (``t(1 - a/2, dof)``)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, dof))


def interval(values: Sequence[float], level: float = LEVEL) -> Interval:
    """Mean, sample standard deviation and the t interval of the mean over the finite ``values``; NaN figures
    for none, an infinite interval for one."""
    finite = [float(v) for v in values if math.isfinite(float(v))]
    n = len(finite)
    if n == 0:
        return Interval(0, math.nan, math.nan, math.nan, math.nan)
    mean = sum(finite) / n
    if n == 1:
        return Interval(1, mean, math.nan, -math.inf, math.inf)
    std = math.sqrt(sum((v - mean) ** 2 for v in finite) / (n - 1))
    half = t_quantile(level, n - 1) * std / math.sqrt(n)
    return Interval(n, mean, std, mean - half, mean + half)


@dataclass(frozen=True)
class SeedRun:
    """One run of a configuration: the search's trial (``original``) or a confirmation trial."""

    trial_id: str
    seed: int
    value: float  # the sweep's metric (the run's best dev value); NaN when the run failed
    original: bool = False
    metrics: dict[str, float] = field(default_factory=dict)  # its final figures (dev and test)


@dataclass
class Candidate:
    """A configuration being confirmed: its place in the search's single-seed ranking and its seeds (the search's
    run, ``original``, and the further seeds)."""

    rank: int  # 1: the search's best trial
    trial_id: str  # the search trial it comes from
    params: dict[str, Any]  # the searched settings (to name it)
    runs: list[SeedRun] = field(default_factory=list)

    @property
    def search_run(self) -> SeedRun | None:
        """The search's trial that made it a candidate (selected on its value: outside the figures)."""
        return next((r for r in self.runs if r.original), None)

    @property
    def search_value(self) -> float:
        run = self.search_run
        return math.nan if run is None else run.value

    @property
    def further_runs(self) -> list[SeedRun]:
        """The confirmation's seeds: the sample the figures and the rule rest on."""
        return [r for r in self.runs if not r.original]

    @property
    def interval(self) -> Interval:
        """The further seeds' figures (the search's run left out: it was selected on its value)."""
        return interval([r.value for r in self.further_runs])

    def representative(self) -> SeedRun:
        """The further seed whose value is closest to the further seeds' mean (the lower seed on a tie); the
        search's run only when no further seed finished (its weights are the only ones there are)."""
        mean = self.interval.mean
        usable = ([r for r in self.further_runs if math.isfinite(r.value)]
                  or [r for r in self.runs if r.original and math.isfinite(r.value)] or self.runs)
        return min(usable, key=lambda r: abs(r.value - mean) if math.isfinite(mean) else 0.0)


def rule_score(summary: Interval, rule: Rule, mode: str) -> float:
    """The figure ``rule`` ranks by, oriented so that larger is better."""
    value = summary.mean if rule == "mean" else summary.pessimistic(mode)
    if math.isnan(value):
        return -math.inf
    return value if mode == "max" else -value


def _order(candidate: Candidate, rule: Rule, mode: str) -> tuple[float, float, int]:
    """``candidate``'s place by ``rule``, larger first: the rule's figure, then the mean (``lower_bound``'s ties,
    such as the infinite intervals of one further seed each), then the higher single-seed rank."""
    summary = candidate.interval
    return rule_score(summary, rule, mode), rule_score(summary, "mean", mode), -candidate.rank


def choose_winner(candidates: Sequence[Candidate], rule: Rule, mode: str) -> Candidate:
    """The candidate ``rule`` prefers (ties: the better mean, then the higher single-seed rank)."""
    if not candidates:
        raise ValueError("no candidate to choose from")
    return max(candidates, key=lambda c: _order(c, rule, mode))


def ranked_by_rule(candidates: Sequence[Candidate], rule: Rule, mode: str) -> list[Candidate]:
    """All candidates, the rule's order (the winner first)."""
    return sorted(candidates, key=lambda c: _order(c, rule, mode), reverse=True)


def further_seeds(original: int, count: int, taken: Sequence[int] = ()) -> list[int]:
    """``count`` seeds after ``original`` (``original + 1, + 2, ...``), skipping any in ``taken``."""
    seeds: list[int] = []
    candidate = original
    while len(seeds) < count:
        candidate += 1
        if candidate not in taken and candidate != original:
            seeds.append(candidate)
    return seeds
