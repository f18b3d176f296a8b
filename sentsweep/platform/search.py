"""The searcher and the scheduler of a sweep: seeded multivariate TPE (Optuna) and ASHA.

Ray's :class:`~ray.tune.search.optuna.OptunaSearch` tells Optuna that a trial stopped by the
scheduler is COMPLETE with its last intermediate value, so TPE learns from truncated curves as if they
were finished ones. :class:`PruningAwareOptunaSearch` tells Optuna the truth: a trial is COMPLETE only
when its trainable made its final report (``final: 1.0``, see
:func:`sentsweep.trainables.method.run_trial`); one stopped before that is PRUNED (its intermediate values
stay in the study, where TPE uses them as it does for pruned trials), a crashed one is FAIL, and one
whose final value is NaN is FAIL too (Ray's version leaves it RUNNING forever).

A trial whose settings are infeasible (it diverged or ran out of memory: :mod:`sentsweep.trainables.infeasible`)
is not a FAIL, which TPE ignores and so keeps proposing the same divergent learning rates: it is told as COMPLETE
with a constraint violation (Optuna's ``Trial.set_constraint``, key ``diverged`` or ``out_of_memory``, value 1).
TPE puts infeasible trials in its "bad" group by their violation, whatever their value, and ``Study.best_trial``
skips them; the value they carry (:func:`infeasible_value`: the worst value the study has seen) only keeps the
optimisation-history plot on its scale.

A multi-objective sweep (``objectives:``, :mod:`.objectives`) gets a study with one direction per objective, told every
objective of a finished trial (costs derived from its report); the same TPE sampler handles it (Optuna's TPE is
multi-objective), with constant liar, constraints, warm start (from a sweep with the same directions) and the RDB
mirror as for one metric. Tune, ASHA and Tune's concurrency limiter see the searcher as single-objective on the first
objective (which every report carries); Optuna keeps no intermediate values for several objectives, so a pruned trial
is PRUNED without them. A further dev metric is told at the trial's selected report (:func:`.objectives.select_report`).
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import optuna
from optuna.samplers._tpe.sampler import _RELATIVE_PARAMS_KEY, default_gamma, hyperopt_default_gamma
from optuna.trial import FrozenTrial, TrialState
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler
from ray.tune.search.optuna import OptunaSearch

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.drain import evaluation_result, is_draining
from sentsweep.platform.failures import failure_reason, infeasibility, is_failed
from sentsweep.platform.objectives import Objective, objective_values, select_report
from sentsweep.platform.optuna_storage import StudyMirror
from sentsweep.platform.study_json import write_study
from sentsweep.platform.warm_start import unseen_points

#: The key a trainable's last report carries once the trial has run to its end.
FINAL_KEY = "final"


def is_final(result: dict[str, Any] | None) -> bool:
    """Whether a (flattened) Tune result is a trial's final report."""
    return bool(result) and result.get(FINAL_KEY) == 1.0


class PruningAwareOptunaSearch(OptunaSearch):
    """OptunaSearch that reports scheduler-stopped trials as PRUNED and NaN results as FAIL (infeasible ones as
    constraint violations), steps by evaluation (a stopping sweep's draining reports skipped:
    :mod:`sentsweep.platform.drain`), and copies each finished trial to ``mirror`` (:mod:`.optuna_storage`), if any."""

    #: Where finished trials are copied for optuna-dashboard (set by :func:`build_searcher`).
    mirror: StudyMirror | None = None
    #: The objectives of a multi-objective sweep (:mod:`.objectives`); empty: the one ``metric``.
    objectives: tuple[Objective, ...] = ()

    def __init__(self, *args: Any, objectives: Sequence[Objective] = (), **kwargs: Any) -> None:
        """As :class:`OptunaSearch`; with two or more ``objectives`` the study gets their directions (``metric`` and
        ``mode`` are then the first objective's, which is all Tune sees of the searcher)."""
        if len(objectives) > 1:
            kwargs.update(metric=[o.metric for o in objectives], mode=[o.mode for o in objectives])
        super().__init__(*args, **kwargs)
        self._selected: dict[str, Any] = {}  # trial id -> its selected report (multi-objective)
        if len(objectives) > 1:
            self.objectives = tuple(objectives)
            self._metric, self._mode = objectives[0].metric, objectives[0].mode

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        if is_draining(result) or trial_id not in self._ot_trials:  # unknown: a trial not adopted (.torn_snapshot)
            return
        if not self.objectives:
            super().on_trial_result(trial_id, evaluation_result(result))
        elif not is_final(result):  # no intermediate values for several objectives: the selected report is kept
            self._selected[trial_id] = select_report(self._selected.get(trial_id), result, self.objectives[0])

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id not in self._ot_trials:  # not adopted from a torn snapshot (.torn_snapshot): nothing to tell
            self._completed_trials.add(trial_id)
            return None
        if trial_id in self._completed_trials:
            return super().on_trial_complete(trial_id, result, error)
        value: Any = result.get(self.metric) if result else None
        if error or not result:
            state, value = (TrialState.FAIL if error else TrialState.PRUNED), None
        elif is_failed(result):  # a deterministic failure (sentsweep.platform.failures)
            ot_trial = self._ot_trials[trial_id]
            ot_trial.set_user_attr("fail_reason", failure_reason(result))
            kind = infeasibility(result)
            if kind is None:
                state, value = TrialState.FAIL, None
            else:  # what the sampler must learn: these settings cannot work
                ot_trial.set_constraint(kind, 1.0)
                state, value = TrialState.COMPLETE, infeasible_value(self._ot_study)
        elif not is_final(result):
            state, value = TrialState.PRUNED, None
            self._report_last(trial_id, result)
        else:
            values = objective_values(result, self.objectives, self._selected.pop(trial_id, None)) \
                if self.objectives else [value]
            finite = all(v is not None and math.isfinite(float(v)) for v in values)
            state = TrialState.COMPLETE if finite else TrialState.FAIL
            value = (values if self.objectives else value) if finite else None
        self._ot_study.tell(self._ot_trials[trial_id], value, state=state)
        self._completed_trials.add(trial_id)
        if self.mirror is not None:  # the whole study: what finished while the mirror's storage was down too
            self.mirror.add_all(self._ot_study)

    def _report_last(self, trial_id: str, result: dict) -> None:
        """Ray withholds the result that made the scheduler stop a trial; Optuna should see it (one objective only:
        Optuna keeps no intermediate values for several)."""
        if self.objectives:
            return
        value, step = result.get(self.metric), evaluation_result(result).get("training_iteration")
        if value is None or step is None or not math.isfinite(float(value)):
            return
        with warnings.catch_warnings():  # Optuna ignores (and warns about) a step reported twice
            warnings.simplefilter("ignore")
            self._ot_trials[trial_id].report(float(value), int(step))

    def save_to_dir(self, checkpoint_dir: str, session_str: str = "default") -> None:
        """Tune's searcher state, and the study as JSON beside it for the plots (:mod:`.study_json`)."""
        super().save_to_dir(checkpoint_dir, session_str)
        write_study(self._ot_study, checkpoint_dir)

    @property
    def study(self) -> optuna.Study:
        """The Optuna study (for plots and tests)."""
        return self._ot_study


def infeasible_value(study: optuna.Study) -> float | list[float]:
    """The value an infeasible trial is told with: the worst value the study has seen (a finished trial's or a
    report's), 0.0 before any; never the best, since Optuna ranks infeasible trials by their violation. A
    multi-objective study gets the worst of each objective over its feasible finished trials."""
    feasible = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
                if not t.constraints]
    worst = []
    for i, direction in enumerate(study.directions):
        seen = [v for t in feasible
                for v in ((t.values[i],) if t.values else ()) + tuple(t.intermediate_values.values())
                if v is not None and math.isfinite(v)]
        worst.append(0.0 if not seen else min(seen) if direction == optuna.study.StudyDirection.MAXIMIZE
                     else max(seen))
    return worst if len(worst) > 1 else worst[0]


class FinalAwareASHA(ASHAScheduler):
    """ASHA whose ``max_t`` only places the rungs: a trial ends at its own step budget.

    Ray's ASHA stops every trial at ``max_t``; ours would then miss their final report (test metrics,
    ``final: 1.0``) and count as pruned. The final report itself is never a reason to stop either, nor a draining
    report (a stopping sweep's checkpoint, :mod:`sentsweep.platform.drain`); rungs count evaluations.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(stop_last_trials=False, **kwargs)

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        if is_final(result) or is_draining(result):
            return TrialScheduler.CONTINUE
        return super().on_trial_result(tune_controller, trial, evaluation_result(result))


#: TPE's random start-up when a sweep sets no ``startup_trials``: Optuna's own default, read from its signature.
OPTUNA_STARTUP_TRIALS: int = inspect.signature(optuna.samplers.TPESampler).parameters["n_startup_trials"].default


#: TPE's split of n finished trials into its "good" and "bad" groups (``tpe_gamma``): the size of the good group.
#: Optuna's default (``ceil(0.1 n)``, at most 25) and Hyperopt's (``ceil(0.25 sqrt(n))``, at most 25: Bergstra et al.,
#: the sweep's default). A multi-objective study keeps Optuna's own multi-objective split (``ceil(0.1 n)``, no cap).
TPE_GAMMAS: dict[str, Callable[[int], int]] = {"hyperopt": hyperopt_default_gamma, "optuna": default_gamma}


def build_sampler(config: SweepConfig) -> optuna.samplers.TPESampler:
    """Seeded multivariate TPE with constant liar; its start-up is ``startup_trials`` (default
    :data:`OPTUNA_STARTUP_TRIALS`) *finished* trials, whatever the concurrency; its good group is ``tpe_gamma``'s
    (:data:`TPE_GAMMAS`).

    Why Hyperopt's split by default: replayed against the recorded CoSENT tables (``bench/search_table.py replay``,
    100 seeds, TPE + ASHA with the paper's defaults first), the good group of ``ceil(0.25 sqrt(n))`` trials reached
    the target in 77% of the seeds on the 100-step table and 53% on the 30-step one, against 50% and 41% with
    Optuna's ``ceil(0.1 n)`` (README, "Does the search pay?"). Optuna deprecated the ``gamma`` argument in 4.9 (to be
    removed in 6.0): the pinned 5.x keeps it.

    The choice under concurrency: Optuna's start-up counts finished trials (COMPLETE or PRUNED), not suggestions,
    and it stays so. A running trial is no observation: constant liar only keeps later suggestions away from it.
    So with ``max_concurrent_trials`` c, the first c suggestions are all random (no trial has finished when they
    are made), and TPE makes its first suggestion once ``startup_trials`` trials have finished: up to
    ``startup_trials + c - 1`` searched suggestions are random (:func:`random_suggestions`), 25 of a 500-trial
    sweep at the default and 16 concurrent. Counting suggestions instead (a start-up lowered by
    c - 1) would have TPE split one or two observations into its good and bad groups among up to c - 1 lies, i.e.
    exploit at random; a sweep that wants TPE sooner lowers ``startup_trials`` itself, knowing that."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message=".*`gamma`.*", category=FutureWarning)  # deprecated in 4.9, kept
        startup = config.startup_trials if config.startup_trials is not None else OPTUNA_STARTUP_TRIALS
        gamma = TPE_GAMMAS[config.tpe_gamma] if len(config.modes) == 1 else None
        return optuna.samplers.TPESampler(seed=config.seed, multivariate=True, constant_liar=True,
                                          n_startup_trials=startup, gamma=gamma)


def random_suggestions(config: SweepConfig) -> tuple[int, int]:
    """The fewest and the most searched suggestions of a sweep that are random before TPE models the space
    (:func:`build_sampler`), capped at ``num_samples``; the space's first points come on top, as given.

    The first ``max_concurrent_trials`` suggestions are made together (Tune fills every free slot at the start),
    so the fewest is the larger of the start-up and the concurrency, reached when the first trials end together;
    the most, ``startup + concurrency - 1``, when they end one at a time, each freeing the slot of the next."""
    startup = config.startup_trials if config.startup_trials is not None else OPTUNA_STARTUP_TRIALS
    concurrency = config.max_concurrent_trials or config.num_samples
    return min(max(startup, concurrency), config.num_samples), min(startup + concurrency - 1, config.num_samples)


def made_by_model(trial: FrozenTrial) -> bool:
    """Whether TPE's multivariate model made ``trial``'s parameters (not its random start-up, nor a fixed point):
    Optuna keeps a model-made suggestion in the trial's system attributes, for constant liar."""
    return any(key.startswith(_RELATIVE_PARAMS_KEY) for key in trial.system_attrs)


def build_searcher(config: SweepConfig, define_by_run: Callable[[optuna.Trial], dict | None],
                   points: list[dict[str, Any]] | None, *, history: Sequence[FrozenTrial] = (),
                   mirror: StudyMirror | None = None) -> PruningAwareOptunaSearch:
    """Seeded TPE (:func:`build_sampler`) over a define-by-run space; ``points`` go first, in order
    (the paper's setting, then any preset points of the space), except those ``history`` (an earlier sweep's
    trials: :mod:`.warm_start`) holds already; the study starts with ``history``; finished trials are copied
    to ``mirror``."""
    sampler = build_sampler(config)
    first = unseen_points([p for p in points or [] if p], history)
    searcher = PruningAwareOptunaSearch(define_by_run, metric=config.metric, mode=config.mode, sampler=sampler,
                                        points_to_evaluate=first or None, study_name=config.name,
                                        objectives=config.objective_list)
    told = {len(t.values) for t in history if t.values is not None}
    if told - {len(config.modes)}:
        raise ConfigError(f"the earlier sweep's trials carry {max(told)} objective value(s), this sweep has "
                          f"{len(config.modes)} objective(s): warm start needs the same objectives", field="warm_start")
    searcher.study.add_trials(history)
    searcher.mirror = mirror
    return searcher


def build_scheduler(config: SweepConfig) -> TrialScheduler:
    """ASHA over ``training_iteration`` (one per dev evaluation), or FIFO (no early stopping)."""
    s = config.scheduler
    if s.type == "fifo":
        return FIFOScheduler()
    return FinalAwareASHA(time_attr="training_iteration", max_t=s.max_t, grace_period=s.grace_period,
                          reduction_factor=s.reduction_factor, brackets=s.brackets)


def scheduler_label(config: SweepConfig) -> str:
    """How the scheduler is named in a pruned trial's reason."""
    return "ASHA" if config.scheduler.type == "asha" else "the sweep"
