"""The sweep's Optuna sampler, by ``searcher``: ``tpe`` (the default), ``gp``, ``random`` or ``grid``. OptunaHub's
``AutoSampler`` is not offered: it downloads its code when loaded, and a sweep fetches nothing at run time."""

from __future__ import annotations

import copy
import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState

from sentsweep.platform.config import SweepConfig
from sentsweep.trainables.report_keys import INFEASIBLE_KINDS

#: How many times the space is run on a throwaway study to find every parameter it may suggest (its branches).
SPACE_DRAWS = 64
#: TPE's random start-up when a sweep sets no ``startup_trials``: Optuna's own default, read from its signature.
OPTUNA_STARTUP_TRIALS: int = inspect.signature(optuna.samplers.TPESampler).parameters["n_startup_trials"].default


def default_gamma(n: int) -> int:
    """Optuna's good-group size for n finished trials: ``min(ceil(0.1 n), 25)``."""
    return min(math.ceil(0.1 * n), 25)


def hyperopt_default_gamma(n: int) -> int:
    """Hyperopt's good-group size for n finished trials: ``min(ceil(0.25 sqrt(n)), 25)`` (Bergstra et al. 2011)."""
    return min(math.ceil(0.25 * n**0.5), 25)


#: The size of TPE's good group by ``tpe_gamma`` (a multi-objective study keeps Optuna's own split).
TPE_GAMMAS: dict[str, Callable[[int], int]] = {"hyperopt": hyperopt_default_gamma, "optuna": default_gamma}


def random_suggestions(config: SweepConfig) -> tuple[int, int]:
    """The fewest and the most random suggestions before TPE models the space (capped at ``num_samples``)."""
    startup = config.startup_trials if config.startup_trials is not None else OPTUNA_STARTUP_TRIALS
    concurrency = config.max_concurrent_trials or config.num_samples
    return min(max(startup, concurrency), config.num_samples), min(startup + concurrency - 1, config.num_samples)


def build_sampler(config: SweepConfig, define_by_run: Callable[[optuna.Trial], Any] | None = None,
                  replicas: int = 0) -> optuna.samplers.BaseSampler:
    """The sampler ``searcher`` names. TPE is seeded, multivariate, with constant liar; its start-up counts
    *finished* trials and its good group is ``tpe_gamma``'s. Hyperopt's split is the default: on the recorded CoSENT
    tables (100 seeds) it reached the target in 77% and 53% of the seeds against Optuna's 50% and 41%. The start-up
    of TPE and GP grows by the noise ``replicas``: repeats of the first point take no random draw's place."""
    startup = (config.startup_trials if config.startup_trials is not None else OPTUNA_STARTUP_TRIALS) + replicas
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if config.searcher == "gp":
            return optuna.samplers.GPSampler(seed=config.seed, n_startup_trials=startup)
        if config.searcher == "random":
            return optuna.samplers.RandomSampler(seed=config.seed)
        if config.searcher == "grid":
            assert define_by_run is not None, "a grid sampler needs the search space"
            return SweepGridSampler(space_grid(define_by_run, config.grid_points), seed=config.seed)
        warnings.filterwarnings("ignore", message=".*`gamma`.*", category=FutureWarning)  # deprecated in 4.9, kept
        gamma = TPE_GAMMAS[config.tpe_gamma] if len(config.modes) == 1 else None
        return optuna.samplers.TPESampler(seed=config.seed, multivariate=True, constant_liar=True,
                                          n_startup_trials=startup, gamma=gamma)


class SweepGridSampler(optuna.samplers.GridSampler):
    """Optuna's ``GridSampler`` leaving the end of the search to the searcher: its ``after_trial`` calls
    ``Study.stop``, which only ``Study.optimize`` allows."""

    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        return None


def grid_values(dist: BaseDistribution, points: int) -> list[Any]:
    """A categorical's choices, or ``points`` values over a numeric range, ends included."""
    if isinstance(dist, CategoricalDistribution):
        return list(dist.choices)
    low, high = float(dist.low), float(dist.high)
    raw = np.geomspace(low, high, points) if dist.log else np.linspace(low, high, points)
    if dist.step is not None:
        raw = low + np.round((raw - low) / dist.step) * dist.step
    return list(dict.fromkeys(round(v) if isinstance(dist, IntDistribution) else float(v) for v in raw))


def space_grid(define_by_run: Callable[[optuna.Trial], Any], points: int) -> dict[str, list[Any]]:
    """The grid of every parameter the space may suggest (each branch shows over :data:`SPACE_DRAWS` draws)."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    found: dict[str, BaseDistribution] = {}
    for _ in range(SPACE_DRAWS):
        trial = study.ask()
        define_by_run(trial)
        found.update({k: v for k, v in trial.distributions.items() if k not in found})
        study.tell(trial, 0.0)
    grid = {name: grid_values(dist, points) for name, dist in found.items()}
    if not grid:
        raise ValueError("the search space suggests no parameter: nothing to grid")
    return grid


def uniform_constraint_keys(sampler: optuna.samplers.BaseSampler) -> tuple[str, ...]:
    """The constraint keys every finished trial must carry: ``GPSampler`` refuses trials with different keys."""
    return INFEASIBLE_KINDS if isinstance(sampler, optuna.samplers.GPSampler) else ()


def with_constraint_keys(trials: Sequence[FrozenTrial], keys: Sequence[str]) -> list[FrozenTrial]:
    """Copies of ``trials`` whose COMPLETE ones carry each of ``keys`` (0 where they lacked it)."""
    out = [copy.deepcopy(trial) for trial in trials]
    for trial in out:
        if trial.state == TrialState.COMPLETE:
            for key in set(keys) - set(trial.constraints):
                trial.set_constraint(key, 0.0)
    return out


def is_feasible(trial: FrozenTrial) -> bool:
    """Whether a trial satisfies its constraints (a value above 0 is a violation)."""
    return not any(v > 0 for v in trial.constraints.values())
