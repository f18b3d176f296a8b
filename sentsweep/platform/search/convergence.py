"""When to stop searching (``stop_when: converged``): an improvement evaluator of Optuna's terminator ends a search
once ``improvement < noise sd``, the noise configured or measured on replicas of the first point. The improvement is
the best's rise over the last ``patience`` ended trials (:class:`StagnationEvaluator`), or what a Gaussian process
still expects: the regret bound (Makarova et al. 2022) or EMMR (Ishibashi et al. 2023)."""

from __future__ import annotations

import logging
import math
import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.study import StudyDirection
from optuna.terminator import BaseImprovementEvaluator
from optuna.trial import FrozenTrial, TrialState

from sentsweep.platform.config_sections import ConvergenceConfig
from sentsweep.platform.results import is_warm_start
from sentsweep.platform.search.samplers import is_feasible
from sentsweep.tracking.vocabulary import STOP_REASON_TAG

logger = logging.getLogger(__name__)

#: The user attribute of an Optuna trial that re-runs the first point with a further seed (its seed).
NOISE_SEED_ATTR = "noise_seed"
#: The study's user attribute holding the decision that ended the search (:meth:`Converged.record`).
CONVERGED_ATTR = "converged"
#: How far the noise replicas' seeds lie from the trials' seed (apart from the confirmation stage's, which follow it).
REPLICA_SEED_OFFSET = 1000


@dataclass(frozen=True)
class Converged:
    """Why the search ended: at which trial, over how many trials, the improvement (a regret bound, or the best's
    rise over the last ``patience`` trials) and the noise."""

    trial: int
    finished: int
    regret_bound: float
    noise_sd: float
    noise_source: str
    evaluator: str
    patience: int | None = None

    def line(self) -> str:
        noise = f"noise sd {self.noise_sd:.3g} ({self.noise_source})"
        why = (f"regret bound {self.regret_bound:.3g} < {noise} over {self.finished} finished trials"
               if self.patience is None else f"the best rose by {self.regret_bound:.3g} over the last "
               f"{self.patience} of {self.finished} ended trials, < {noise}")
        return f"search converged at trial {self.trial}: {why}; no new trial started, the running ones finish"

    def metrics(self) -> dict[str, float]:
        improvement = "converged_regret_bound" if self.patience is None else "converged_best_rise"
        return {"converged_trial": float(self.trial), "converged_finished_trials": float(self.finished),
                improvement: self.regret_bound, "converged_noise_sd": self.noise_sd,
                **({"converged_patience": float(self.patience)} if self.patience is not None else {})}


def replica_points(first_point: dict[str, Any] | None, settings: ConvergenceConfig,
                   seed: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The first point again with the noise seeds ``seed + 1001, ...``, each with its seed as a user attribute."""
    if not first_point or settings.noise_sd is not None:
        return []
    return [(dict(first_point), {NOISE_SEED_ATTR: seed + REPLICA_SEED_OFFSET + k})
            for k in range(1, settings.noise_seeds + 1)]


def measured_noise(trials: Sequence[FrozenTrial]) -> float | None:
    """The sample sd of the first point's runs: of their values when all finished (their best dev values, the unit of
    the improvement), else at the last evaluation all reached; None until two have one."""
    replicas = [t for t in trials if NOISE_SEED_ATTR in t.user_attrs]
    if not replicas:
        return None
    params = replicas[0].params
    original = next((t for t in trials if NOISE_SEED_ATTR not in t.user_attrs and t.params == params), None)
    runs = [t for t in ([original] if original else []) + replicas
            if t.state in (TrialState.COMPLETE, TrialState.PRUNED) and (t.intermediate_values or t.value is not None)]
    if len(runs) < 2:
        return None
    if all(t.state == TrialState.COMPLETE and t.value is not None for t in runs):
        return statistics.stdev([float(t.value) for t in runs])
    common = set.intersection(*(set(t.intermediate_values) for t in runs))
    finite = [s for s in common if all(math.isfinite(t.intermediate_values[s]) for t in runs)]
    return statistics.stdev([t.intermediate_values[max(finite)] for t in runs]) if finite else None


def best_value(trial: FrozenTrial, sign: float) -> float | None:
    """The best of a trial's reports and final value (``sign`` 1 to maximize, -1 to minimize), times ``sign``."""
    values = [*trial.intermediate_values.values(), *([trial.value] if trial.state == TrialState.COMPLETE else [])]
    finite = [sign * float(v) for v in values if v is not None and math.isfinite(v)]
    return max(finite) if finite else None


class StagnationEvaluator(BaseImprovementEvaluator):
    """The patience rule as an Optuna improvement evaluator: how much the best value rose over the last ``patience``
    trials, in the order given, each trial counted by its best report. A pruned trial counts, so the rule also
    works under ASHA. Optuna's ``BestValueStagnationEvaluator`` counts any rise of a finished trial's value; compared
    with the noise sd, a rise within the noise does not restart the count here."""

    def __init__(self, patience: int) -> None:
        self.patience = patience

    def evaluate(self, trials: list[FrozenTrial], study_direction: StudyDirection) -> float:
        sign = 1.0 if study_direction == StudyDirection.MAXIMIZE else -1.0
        bests = [b for t in trials if (b := best_value(t, sign)) is not None]
        if len(bests) <= self.patience:
            raise ValueError(f"the stagnation rule needs more than {self.patience} trials, got {len(bests)}")
        return max(bests) - max(bests[:-self.patience])


class ConvergenceCheck:
    """``improvement < noise sd`` over the finished, feasible trials, given ``min_trials`` and the noise."""

    def __init__(self, settings: ConvergenceConfig, direction: str, seed: int = 0,
                 evaluator: Callable[[], BaseImprovementEvaluator] | None = None) -> None:
        self.settings, self.seed, self.evaluator = settings, seed, evaluator
        self.direction = StudyDirection.MAXIMIZE if direction == "maximize" else StudyDirection.MINIMIZE
        self.zero_noise_said = False  # the warning for a measured noise of 0, once

    def _optuna_evaluator(self) -> BaseImprovementEvaluator:
        """:class:`StagnationEvaluator`, or Optuna's ``RegretBoundEvaluator`` or ``EMMREvaluator``, seeded. The regret
        bound's ``min_n_trials`` is the floor of the top trials its Gaussian process fits, not a wait: at 1 it fits the
        better half of the finished trials (Optuna's default, 20, fits at least 20); the replays measured 1."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            from optuna.terminator import EMMREvaluator, RegretBoundEvaluator

            if self.settings.evaluator == "stagnation":
                return StagnationEvaluator(self.settings.patience)
            if self.settings.evaluator == "emmr":
                return EMMREvaluator(min_n_trials=2, seed=self.seed)
            return RegretBoundEvaluator(min_n_trials=1, seed=self.seed)

    def check(self, trials: Sequence[FrozenTrial], started: int) -> Converged | None:
        """The decision once ``started`` trials have been started; None: go on. ``min_trials`` counts search trials,
        never the noise replicas; Optuna's evaluators fit the replicas' values too. The stagnation rule reads the
        ended search trials with a value (pruned ones too, the noise replicas left out) in the order they were
        started; its last ``patience`` are this sweep's own, after any warm start's."""
        stagnation = self.settings.evaluator == "stagnation"
        if stagnation:
            sign = 1.0 if self.direction == StudyDirection.MAXIMIZE else -1.0
            finished = [t for t in sorted(trials, key=lambda t: t.number) if NOISE_SEED_ATTR not in t.user_attrs
                        and t.state in (TrialState.COMPLETE, TrialState.PRUNED) and is_feasible(t)
                        and best_value(t, sign) is not None]
            if sum(not is_warm_start(t) for t in finished) < self.settings.patience:
                return None
        else:
            finished = [t for t in trials if t.state == TrialState.COMPLETE and is_feasible(t)
                        and t.value is not None and math.isfinite(t.value)]
        search = [t for t in finished if NOISE_SEED_ATTR not in t.user_attrs]  # the fit sees the replicas too
        if len(search) < self.settings.min_trials:
            return None
        noise, source = self.settings.noise_sd, "config"
        if noise is None:
            noise, source = measured_noise(trials), "measured"
        if noise is None:
            return None
        # getattr: a check pickled before the flag existed has not said it
        if noise == 0 and source == "measured" and not getattr(self, "zero_noise_said", False):
            self.zero_noise_said = True
            logger.warning("stop_when converged: the first point's runs with further seeds scored the same, so the "
                           "measured noise sd is 0 and no improvement can be below it; the search runs to "
                           "num_samples unless convergence.noise_sd is set")
        evaluator = (self.evaluator or self._optuna_evaluator)()
        try:
            bound = float(evaluator.evaluate(list(finished), self.direction))
        except ValueError:  # too few trials for the rule, or an empty intersection of the trials' search spaces
            return None
        if not bound < noise:
            return None
        return Converged(started, len(search), bound, noise, source, type(evaluator).__name__,
                         self.settings.patience if stagnation else None)


def converged_of(study: optuna.Study) -> Converged | None:
    record = study.user_attrs.get(CONVERGED_ATTR)
    return Converged(**{k: record[k] for k in Converged.__dataclass_fields__ if k in record}) \
        if isinstance(record, dict) else None


def record_convergence(study: optuna.Study | None, set_tags: Callable[[dict[str, str]], None],
                       log_metrics: Callable[[dict[str, float]], None],
                       echo: Callable[[str], None]) -> Converged | None:
    if study is None or (decision := converged_of(study)) is None:
        return None
    echo(decision.line())
    set_tags({STOP_REASON_TAG: decision.line(), "sentsweep.converged.noise_source": decision.noise_source,
              "sentsweep.converged.evaluator": decision.evaluator})
    log_metrics(decision.metrics())
    return decision
