"""Replay the platform's searcher and scheduler against a recorded table (:mod:`bench.search_grid`).

No training and no Ray cluster: the table is the objective and each report's recorded seconds its cost. The
searcher is the sweep's own :class:`~sentsweep.platform.search.searcher.PruningAwareOptunaSearch` (a Tune searcher on
Optuna),
for TPE built by :func:`~sentsweep.platform.search.searcher.build_searcher` itself (seeded multivariate TPE, constant
liar, the
sweep's ``startup_trials``, the paper's defaults first), for the baselines with Optuna's ``RandomSampler`` or
``GridSampler``. The scheduler is the sweep's own (:func:`~sentsweep.platform.search.scheduler.build_scheduler`: Ray's
ASHA
with the sweep's grace period and reduction factor, or FIFO), driven as Tune's controller drives it: each report
goes to the scheduler, then (unless it said STOP) to the searcher; a stopped or finished trial is completed on
both with its last result; a finished trial makes the final report ``run_trial`` makes (the best dev value,
``final: 1.0``) after its last evaluation.

Trials run ``concurrency`` at a time in event time: a trial started at ``t`` makes report ``i`` at
``t + seconds[i]``; a free slot asks the searcher for the next trial at once, so with concurrency > 1 the searcher
suggests while other trials are running (the constant liar). A continuous suggestion is snapped to the nearest
grid value (on a log scale where the space is log-uniform); categorical choices are restricted to the table's.
The incumbent is the best dev value any report has shown so far (the loop keeps each trial's best weights).
"""

from __future__ import annotations

import heapq
import itertools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution
from ray.tune.schedulers import TrialScheduler
from ray.tune.search import Searcher

from bench.search_grid import Config, Curve, GridTable, config_of
from sentsweep.platform.config import ConvergenceConfig, SchedulerConfig, SweepConfig
from sentsweep.platform.search.scheduler import build_scheduler
from sentsweep.platform.search.searcher import PruningAwareOptunaSearch, build_searcher
from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.registry import get_method
from sentsweep.trainables.report_keys import TOTAL_STEPS_KEY

METRIC = "stsb_dev"
ITERATION = "training_iteration"


@dataclass(frozen=True)
class Strategy:
    """A search strategy: the sampler, whether ASHA stops trials, whether the paper's defaults go first."""

    name: str
    sampler: str  # "tpe", "gp", "random" or "grid"
    asha: bool
    defaults_first: bool = False


STRATEGIES: tuple[Strategy, ...] = (
    Strategy("TPE + ASHA (defaults first)", "tpe", True, True),
    Strategy("TPE (defaults first)", "tpe", False, True),
    Strategy("TPE + ASHA (no defaults)", "tpe", True),  # what the search adds beyond the paper's defaults
    Strategy("random + ASHA", "random", True),
    Strategy("random", "random", False),
    Strategy("grid", "grid", False),
)


@dataclass(frozen=True)
class SearchSettings:
    """The sweep settings the replay uses (defaults: :class:`SweepConfig`'s, i.e. the platform's)."""

    startup_trials: int | None = SweepConfig.model_fields["startup_trials"].default
    grace_period: int = SchedulerConfig.model_fields["grace_period"].default
    reduction_factor: float = SchedulerConfig.model_fields["reduction_factor"].default
    tpe_gamma: str = SweepConfig.model_fields["tpe_gamma"].default
    #: ``stop_when: converged`` with this noise sd (None: the search runs its trials); its ``min_trials``
    noise_sd: float | None = None
    min_trials: int = ConvergenceConfig.model_fields["min_trials"].default
    #: the improvement the check compares with the noise (the sweep's ``convergence.evaluator``)
    evaluator: str = ConvergenceConfig.model_fields["evaluator"].default
    #: the stagnation rule's ``convergence.patience``
    patience: int = ConvergenceConfig.model_fields["patience"].default

    def sweep_config(self, seed: int, asha: bool, searcher: str = "tpe") -> SweepConfig:
        scheduler = SchedulerConfig(type="asha" if asha else "fifo", grace_period=self.grace_period,
                                    reduction_factor=self.reduction_factor)
        converged = self.noise_sd is not None
        return SweepConfig(name="replay", method="cosent", seed=seed, startup_trials=self.startup_trials,
                           tpe_gamma=self.tpe_gamma, scheduler=scheduler,
                           searcher=searcher if searcher in ("tpe", "gp", "random") else "tpe",
                           stop_when="converged" if converged else "num_samples",
                           convergence=ConvergenceConfig(noise_sd=self.noise_sd, min_trials=self.min_trials,
                                                         evaluator=self.evaluator, patience=self.patience))


def space_distributions(define_by_run: Callable[[optuna.Trial], Any]) -> dict[str, BaseDistribution]:
    """The distributions a define-by-run space suggests (read by running it once on a throwaway study)."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    define_by_run(trial)
    return dict(trial.distributions)


def table_distribution(values: list[Any]) -> BaseDistribution:
    """A setting's distribution from its grid values alone: floats spanning a decade or more log-uniform over their
    range, other floats uniform, strings and integers the recorded choices."""
    if all(isinstance(v, float) for v in values) and len(values) > 1:
        low, high = min(values), max(values)
        return FloatDistribution(low, high, log=low > 0 and high / low >= 10)
    return CategoricalDistribution(values)


@dataclass
class ReplaySpace:
    """The space a replay searches. With ``space`` (a shipped search space: ``cosent`` for the CoSENT tables) it is
    that space cut down to the table: its ranges for the continuous settings, its choices that the table recorded
    for the categorical ones, the settings the table fixed (warmup) left out. Without (``None``: the multi-view
    table, whose grid is CPU-sized and lies outside the paper-scale shipped space) each setting's distribution is
    its grid values' (:func:`table_distribution`); the first point is then the method's defaults, snapped."""

    table: GridTable
    space: str | None = "cosent"
    distributions: dict[str, BaseDistribution] = field(init=False)

    def __post_init__(self) -> None:
        if self.space is None:
            self.distributions = {name: table_distribution(self.table.values(name)) for name in self.table.params}
            return
        real = space_distributions(SEARCH_SPACES[self.space].define_by_run)
        self.distributions = {}
        for name in self.table.params:
            dist, values = real[name], self.table.values(name)
            if isinstance(dist, CategoricalDistribution):
                outside = [v for v in values if v not in dist.choices]
                if outside:  # no suggestion could reach them: the replay would search a smaller table unseen
                    raise ValueError(f"grid values {outside} of '{name}' are not among the space's choices "
                                     f"{list(dist.choices)}: replay with --only {name}=<recorded choices>")
                self.distributions[name] = CategoricalDistribution([c for c in dist.choices if c in values])
            elif isinstance(dist, FloatDistribution):
                outside = [v for v in values if not dist.low <= v <= dist.high]
                if outside:
                    raise ValueError(f"grid values {outside} of '{name}' lie outside the space's range")
                self.distributions[name] = dist
            else:
                raise ValueError(f"'{name}': the replay snaps floats and categoricals only, not {dist}")

    @classmethod
    def for_table(cls, table: GridTable) -> ReplaySpace:
        """The CoSENT tables on the sweep's ``cosent`` space; any other table on its own grid."""
        return cls(table, "cosent" if table.method == "cosent" else None)

    def define_by_run(self, trial: optuna.Trial) -> None:
        for name, dist in self.distributions.items():
            if isinstance(dist, CategoricalDistribution):
                trial.suggest_categorical(name, list(dist.choices))
            else:
                trial.suggest_float(name, dist.low, dist.high, log=dist.log)

    def first_point(self) -> dict[str, Any]:
        """The space's first point (the paper's setting) on the table's settings; for a table's own grid the
        method's defaults, snapped to the grid."""
        if self.space is not None:
            return {name: SEARCH_SPACES[self.space].first_point[name] for name in self.table.params}
        defaults = get_method(self.table.method).config_cls()
        point = {name: getattr(defaults, name) for name in self.table.params}
        return self.table.named(self.snap({k: v if isinstance(v, int | float) else str(v) for k, v in point.items()}))

    def snap(self, params: dict[str, Any]) -> Config:
        """The grid point nearest a suggestion (log distance where the space is log-uniform; numbers off a
        categorical grid to the nearest choice)."""
        snapped = {}
        for name in self.table.params:
            value, dist, values = params[name], self.distributions[name], self.table.values(name)
            if isinstance(value, str) or value in values:
                snapped[name] = value
                continue
            log = getattr(dist, "log", False) or not isinstance(dist, FloatDistribution)
            scale: Callable[[float], float] = math.log if log and min(values) > 0 else float
            snapped[name] = min(values, key=lambda v: abs(scale(v) - scale(float(value))))
        return config_of(snapped, self.table.params)

    def grid(self) -> dict[str, list[Any]]:
        return {name: self.table.values(name) for name in self.table.params}


def make_searcher(strategy: Strategy, space: ReplaySpace, config: SweepConfig) -> PruningAwareOptunaSearch:
    """The sweep's searcher for ``strategy`` (TPE, GP, and any sampler with the defaults first:
    :func:`build_searcher` itself, as a sweep with ``searcher: <sampler>`` builds it)."""
    if strategy.sampler in ("tpe", "gp") or strategy.defaults_first or config.stop_when == "converged":
        points = [space.first_point()] if strategy.defaults_first else []
        return build_searcher(config, space.define_by_run, points)
    if strategy.sampler == "random":
        sampler: optuna.samplers.BaseSampler = optuna.samplers.RandomSampler(seed=config.seed)
    else:
        sampler = optuna.samplers.GridSampler(space.grid(), seed=config.seed)
    return PruningAwareOptunaSearch(space.define_by_run, metric=config.metric, mode=config.mode, sampler=sampler,
                                    study_name=config.name)


@dataclass(frozen=True)
class TrialHandle:
    """What Ray's ASHA reads of a trial: its id."""

    trial_id: str


@dataclass
class Trace:
    """One replay: after each report, the trial-seconds spent, the wall seconds and the incumbent."""

    spent: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    incumbent: list[float] = field(default_factory=list)
    trials: int = 0
    stopped_early: int = 0
    #: Per trial, in launch order: its grid point and the reports it made before it finished or was stopped.
    runs: list[tuple[Config, int]] = field(default_factory=list)
    #: How the searcher told Optuna each trial ended (state name -> count).
    states: dict[str, int] = field(default_factory=dict)
    #: Whether the searcher ended the search (``Searcher.FINISHED``: converged, or a grid done).
    finished_by_searcher: bool = False

    def seconds_to(self, target: float, wall: bool = False) -> float:
        """Trial-seconds (or wall seconds) at the first report that reached ``target``; inf when none did."""
        for spent, elapsed, best in zip(self.spent, self.wall, self.incumbent, strict=True):
            if best >= target:
                return elapsed if wall else spent
        return math.inf

    def best_within(self, budget: float) -> float:
        """The incumbent once ``budget`` trial-seconds were spent (-inf before any report)."""
        best = -math.inf
        for spent, value in zip(self.spent, self.incumbent, strict=True):
            if spent > budget:
                break
            best = value
        return best


@dataclass
class _Running:
    handle: TrialHandle
    curve: Curve
    start: float


def replay(table: GridTable, strategy: Strategy, seed: int, *, cap_s: float, concurrency: int = 1,
           settings: SearchSettings = SearchSettings(), space: ReplaySpace | None = None,
           num_samples: int | None = None, stop_at: float = math.inf) -> Trace:
    """One replay of ``strategy`` (seed ``seed``) until ``cap_s`` trial-seconds are spent, ``num_samples`` trials
    started, the searcher ended the search (grid: or the grid is done) or a report reached ``stop_at``,
    ``concurrency`` trials at a time."""
    space = space or ReplaySpace.for_table(table)
    config = settings.sweep_config(seed, strategy.asha, strategy.sampler)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        searcher = make_searcher(strategy, space, config)
    scheduler = build_scheduler(config)
    scheduler.set_search_properties(config.metric, config.mode)
    max_trials = len(table.curves) if strategy.sampler == "grid" else num_samples
    np.random.seed(seed)  # Ray's ASHA picks a bracket with NumPy's global generator
    trace, events, running = Trace(), [], {}
    finished_seconds, now, counter = 0.0, 0.0, itertools.count()

    def spent_at(t: float) -> float:
        return finished_seconds + sum(t - r.start for r in running.values())

    def launch() -> None:
        trial_id = f"t{trace.trials:05d}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            params = searcher.suggest(trial_id)
        if params == Searcher.FINISHED:
            trace.finished_by_searcher = True
            return
        curve = table.curves[space.snap(params)]
        handle = TrialHandle(trial_id)
        scheduler.on_trial_add(None, handle)
        running[trial_id] = _Running(handle, curve, now)
        trace.runs.append((curve.config, 0))
        heapq.heappush(events, (now + curve.seconds[0], next(counter), trial_id, 0))
        trace.trials += 1

    def finish(trial_id: str, result: dict[str, Any], at: float) -> None:
        nonlocal finished_seconds
        run = running.pop(trial_id)
        trace.runs[int(trial_id[1:])] = (run.curve.config, int(result[ITERATION]) - int("final" in result))
        scheduler.on_trial_complete(None, run.handle, result)
        try:
            searcher.on_trial_complete(trial_id, result)
        except RuntimeError:  # GridSampler calls Study.stop() once the grid is done, which only optimize() allows
            if strategy.sampler != "grid":
                raise
        finished_seconds += at - run.start

    while True:
        while (len(running) < concurrency and spent_at(now) < cap_s and not trace.finished_by_searcher
               and (max_trials is None or trace.trials < max_trials)):
            launch()
        if not events:
            for frozen in searcher.study.get_trials(deepcopy=False):
                trace.states[frozen.state.name] = trace.states.get(frozen.state.name, 0) + 1
            return trace
        now, _, trial_id, index = heapq.heappop(events)
        run = running[trial_id]
        value = run.curve.values[index]
        result = {METRIC: value, ITERATION: index + 1, "step": run.curve.steps[index],
                  TOTAL_STEPS_KEY: run.curve.steps[-1]}  # the scheduler lets a trial's last evaluation go on
        best = max(trace.incumbent[-1] if trace.incumbent else -math.inf, value)
        trace.spent.append(spent_at(now))
        trace.wall.append(now)
        trace.incumbent.append(best)
        if best >= stop_at:
            return trace
        if scheduler.on_trial_result(None, run.handle, result) == TrialScheduler.STOP:
            trace.stopped_early += 1
            finish(trial_id, result, now)
            continue
        searcher.on_trial_result(trial_id, result)
        if index + 1 < len(run.curve.values):
            heapq.heappush(events, (run.start + run.curve.seconds[index + 1], next(counter), trial_id, index + 1))
            continue
        final = {METRIC: run.curve.best, ITERATION: index + 2, "final": 1.0, "step": run.curve.steps[index]}
        scheduler.on_trial_result(None, run.handle, final)  # FinalAwareASHA: always CONTINUE
        searcher.on_trial_result(trial_id, final)
        finish(trial_id, final, now)
