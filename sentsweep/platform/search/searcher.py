"""The sweep's searcher: a Ray Tune ``Searcher`` on Optuna's ask-and-tell API. A trial is COMPLETE only after its
final report; one the scheduler stopped is PRUNED; a crashed or NaN one is FAIL, and so is one that ended before its
first report (a stop by the budget or the time limit), which measured nothing; an infeasible one is COMPLETE with a
constraint violation, so TPE learns to avoid it. ``search.json`` says whether the search is over."""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from ray.tune.search import Searcher

from sentsweep.errors import ConfigError
from sentsweep.platform import results as res
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.objectives import Objective, objective_values, select_report
from sentsweep.platform.search.convergence import CONVERGED_ATTR, NOISE_SEED_ATTR, ConvergenceCheck, replica_points
from sentsweep.platform.search.samplers import build_sampler, is_feasible, uniform_constraint_keys, with_constraint_keys
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.platform.search.warm_start import unseen_points
from sentsweep.platform.stops import SPENT

if TYPE_CHECKING:
    from ray.tune import ResultGrid, Tuner

#: The user attribute of an Optuna trial naming its Tune trial.
TUNE_TRIAL_ATTR = "tune_trial_id"
#: The user attribute of a FAIL trial that says why it failed.
FAIL_REASON_ATTR = "fail_reason"
#: Why a trial the driver lost before Tune saved it was told FAIL on resume.
LOST_REASON = "lost with the driver: not in the experiment state the sweep resumed from"
#: Why a trial that ended without an error before its first report was told FAIL: PRUNED without a value would
#: count in TPE's bad group, against settings that were never measured.
UNREPORTED_REASON = "ended before its first evaluation report: nothing was measured"
#: The mark that the search is over: a resume reads the results back instead of training the errored trials again,
#: unless a bound of the search changed.
SEARCH_FILE = "search.json"


class PruningAwareOptunaSearch(Searcher):
    """Ray Tune's searcher over the journal's study; it pickles where the study is, never the study."""

    def __init__(self, space: Callable[[optuna.Trial], dict | None], *, metric: str, mode: str,
                 sampler: optuna.samplers.BaseSampler, study_name: str, store: StudyStore | None = None,
                 points: Sequence[dict[str, Any]] = (), objectives: Sequence[Objective] = (),
                 history: Sequence[FrozenTrial] = (), replicas: Sequence[tuple[dict, dict]] = (),
                 convergence: ConvergenceCheck | None = None) -> None:
        """``history`` and ``points`` go first, the noise ``replicas`` after the first point (first of all when no
        point is queued). Several ``objectives`` begin with ``metric`` and ``mode``."""
        self.objectives: tuple[Objective, ...] = tuple(objectives) if len(objectives) > 1 else ()
        super().__init__(metric=metric, mode=mode)
        self.space, self.sampler, self.store, self.study_name = space, sampler, store, study_name
        modes = [o.mode for o in self.objectives] or [mode]
        self.directions = ["maximize" if m == "max" else "minimize" for m in modes]
        self.points = [dict(p) for p in points]
        self.convergence = convergence
        self._forget()
        self.study.add_trials(history)
        queue: list[tuple[dict, dict | None]] = [(point, None) for point in self.points]
        queue[1:1] = replicas  # with no point queued, the first point ran in the earlier sweep
        for params, attrs in queue:
            self.study.enqueue_trial(params, user_attrs=attrs)

    def _forget(self, selected: dict[str, Any] | None = None) -> None:
        self._study: optuna.Study | None = None
        self._storage: optuna.storages.BaseStorage | None = None
        self._trials: dict[str, optuna.Trial] = {}  # Tune trial id -> its running Optuna trial
        self._told: set[str] = set()  # Tune trials whose end Optuna was told
        self._selected: dict[str, Any] = dict(selected or {})  # Tune trial id -> its selected report

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_study", "_storage", "_trials", "_told")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._forget(state.get("_selected"))

    @property
    def study(self) -> optuna.Study:
        if self._study is None:
            storage = self.store.storage() if self.store is not None else optuna.storages.InMemoryStorage()
            self._study = optuna.create_study(storage=storage, study_name=self.study_name, directions=self.directions,
                                              sampler=self.sampler, pruner=optuna.pruners.NopPruner(),
                                              load_if_exists=True)
            self._storage = storage
            self._adopt_journal()
        return self._study

    def _trial_id(self, number: int) -> int:
        return self._storage.get_trial_id_from_study_id_trial_number(
            self._storage.get_study_id_from_name(self.study_name), number)

    def _adopt_journal(self) -> None:
        """Which Optuna trial each Tune trial is, and which were told, from the journal; a resumed sampler is
        reseeded, else its start-up would propose its first points again."""
        trials = self._study.get_trials(deepcopy=False)
        if any(TUNE_TRIAL_ATTR in t.user_attrs for t in trials):
            self.sampler.reseed_rng()
        for trial in trials:
            if (tune_id := trial.user_attrs.get(TUNE_TRIAL_ATTR)) is None:
                continue
            if trial.state.is_finished():
                self._told.add(tune_id)
            else:
                self._trials[tune_id] = optuna.Trial(self._study, self._trial_id(trial.number))

    def suggest(self, trial_id: str) -> dict | str | None:
        study = self.study
        if trial_id not in self._trials:
            if self.search_ended():
                return Searcher.FINISHED
            if self.study_name in SPENT:  # the budget is spent: no trial starts while the last ones finish
                return None
            trial = study.ask()
            trial.set_user_attr(TUNE_TRIAL_ATTR, trial_id)
            self._trials[trial_id] = trial
        trial = self._trials[trial_id]
        extra = self.space(trial) or {}
        if NOISE_SEED_ATTR in trial.user_attrs:  # the first point again, with a further seed
            extra["seed"] = int(trial.user_attrs[NOISE_SEED_ATTR])
        return {**trial.params, **extra}

    def search_ended(self) -> bool:
        """Whether the grid is done or the search converged (decided once, kept in the study)."""
        study = self.study
        if isinstance(self.sampler, optuna.samplers.GridSampler) and self.sampler.is_exhausted(study):
            return True
        if self.convergence is None:
            return False
        if CONVERGED_ATTR in study.user_attrs:
            return True
        trials = study.get_trials(deepcopy=False)
        decision = self.convergence.check(trials, started=sum(TUNE_TRIAL_ATTR in t.user_attrs for t in trials))
        if decision is None:
            return False
        study.set_user_attr(CONVERGED_ATTR, dataclasses.asdict(decision))
        return True

    def running(self) -> dict[str, int]:
        self.study  # noqa: B018 - opens the journal
        return {tune_id: trial.number for tune_id, trial in self._trials.items() if tune_id not in self._told}

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.study  # noqa: B018 - opens the journal: which Tune trials it knows
        if res.is_draining(result) or trial_id not in self._trials or trial_id in self._told:
            return
        if not self.objectives:
            self._report(trial_id, result)
        elif not res.is_final(result):  # no intermediate values for several objectives: the selected report is kept
            self._selected[trial_id] = select_report(self._selected.get(trial_id), result, self.objectives[0])

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self.study  # noqa: B018 - opens the journal: which Tune trials it knows
        if trial_id not in self._trials or trial_id in self._told:  # a trial told before a resume: told once
            return
        ot_trial = self._trials[trial_id]
        kind, value = None, None
        # no evaluation: nothing reported, or only a draining report made before the first one (its metric NaN)
        if error or not result or (res.is_draining(result) and res.finite_number(result.get(self.metric)) is None):
            state = TrialState.FAIL
            if not error:
                ot_trial.set_user_attr(FAIL_REASON_ATTR, UNREPORTED_REASON)
        elif res.is_failed(result):  # a deterministic failure (failure_report in sentsweep.trainables)
            ot_trial.set_user_attr(FAIL_REASON_ATTR, res.failure_reason(result))
            kind, state = res.infeasibility(result), TrialState.FAIL
            if kind is not None:  # what the sampler must learn: these settings cannot work
                ot_trial.set_constraint(kind, 1.0)
                state, value = TrialState.COMPLETE, infeasible_value(self.study)
        elif not res.is_final(result):
            state = TrialState.PRUNED
            # Ray withholds the result that made the scheduler stop a trial; a draining report is no evaluation
            if not self.objectives and not res.is_draining(result):
                self._report(trial_id, result, finite=True)
        else:
            values = objective_values(result, self.objectives, self._selected.pop(trial_id, None)) \
                if self.objectives else [result.get(self.metric)]
            finite = all(v is not None and math.isfinite(float(v)) for v in values)
            state = TrialState.COMPLETE if finite else TrialState.FAIL
            value = (values if self.objectives else values[0]) if finite else None
        if state == TrialState.COMPLETE:
            for key in set(uniform_constraint_keys(self.sampler)) - {kind}:
                ot_trial.set_constraint(key, 0.0)
        self.study.tell(ot_trial, value, state=state)
        self._told.add(trial_id)

    def _report(self, trial_id: str, result: dict, *, finite: bool = False) -> None:
        value, step = result.get(self.metric), res.evaluation_result(result).get("training_iteration")
        if value is None or step is None or (finite and not math.isfinite(float(value))):
            return
        with warnings.catch_warnings():  # a step reported again (a trial resumed from a checkpoint): ignored
            warnings.simplefilter("ignore")
            self._trials[trial_id].report(float(value), int(step))

    def forget_lost(self, restored: set[str]) -> int:
        """Tell FAIL each running trial lost with the driver, and queue the lost first points again."""
        lost = [(tune_id, number) for tune_id, number in self.running().items() if tune_id not in restored]
        study = self.study
        lost += [("", t.number) for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                 if TUNE_TRIAL_ATTR not in t.user_attrs]  # asked, not yet a Tune trial
        for tune_id, number in lost:
            self._storage.set_trial_user_attr(self._trial_id(number), FAIL_REASON_ATTR, LOST_REASON)
            study.tell(number, state=TrialState.FAIL)
            self._told.add(tune_id)
        if lost:
            kept = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED,
                                                            TrialState.RUNNING, TrialState.WAITING))
            for point in unseen_points(self.points, kept):
                study.enqueue_trial(point)
        return len(lost)

    def save(self, checkpoint_path: str) -> None:
        Path(checkpoint_path).write_text(json.dumps({"selected": self._selected}, default=_plain), encoding="utf-8")

    def restore(self, checkpoint_path: str) -> None:
        self._forget(json.loads(Path(checkpoint_path).read_text(encoding="utf-8")).get("selected"))


def _plain(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def infeasible_value(study: optuna.Study) -> float | list[float]:
    """The worst value the study has seen (0.0 before any): it keeps the history plot on its scale."""
    feasible = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
                if is_feasible(t)]
    worst = []
    for i, direction in enumerate(study.directions):
        seen = [v for t in feasible
                for v in ((t.values[i],) if t.values else ()) + tuple(t.intermediate_values.values())
                if v is not None and math.isfinite(v)]
        worst.append(0.0 if not seen else min(seen) if direction == optuna.study.StudyDirection.MAXIMIZE else max(seen))
    return worst if len(worst) > 1 else worst[0]


def build_searcher(config: SweepConfig, define_by_run: Callable[[optuna.Trial], dict | None],
                   points: list[dict[str, Any]] | None, *, store: StudyStore | None = None, study_name: str = "",
                   history: Sequence[FrozenTrial] = ()) -> PruningAwareOptunaSearch:
    """The sweep's searcher; ``points`` go first except those ``history`` (a warm start) holds."""
    told = {len(t.values) for t in history if t.values is not None}
    if told - {len(config.modes)}:
        raise ConfigError(f"the earlier sweep's trials carry {max(told)} objective value(s), this sweep has "
                          f"{len(config.modes)} objective(s): warm start needs the same objectives", field="warm_start")
    queued = unseen_points([p for p in points or [] if p], history)
    convergence, replicas = None, []
    if config.stop_when == "converged":
        convergence = ConvergenceCheck(config.convergence, "maximize" if config.mode == "max" else "minimize",
                                       config.seed)
        # a warm start's history marks no replica: the first point's run there is the original when none is queued
        first = queued[0] if queued else next((p for p in points or [] if p), None)
        replicas = replica_points(first, config.convergence, int(config.fixed.get("seed", config.seed)))
    sampler = build_sampler(config, define_by_run, len(replicas))
    return PruningAwareOptunaSearch(define_by_run, metric=config.metric, mode=config.mode, sampler=sampler, store=store,
                                    study_name=study_name or config.name, points=queued, replicas=replicas,
                                    objectives=config.objective_list, convergence=convergence,
                                    history=with_constraint_keys(history, uniform_constraint_keys(sampler)))


def search_bounds(config: SweepConfig) -> dict[str, Any]:
    return {"num_samples": config.num_samples, "time_budget_s": config.time_budget_s,
            "budget": config.budget.model_dump(mode="json")}


def mark_search_over(location: SweepLocation, config: SweepConfig) -> None:
    mark = {"status": "over", "ended": time.time(), "bounds": search_bounds(config)}
    location.write_text(SEARCH_FILE, json.dumps(mark, indent=1))


def search_results(tuner: Tuner, location: SweepLocation, config: SweepConfig, *, fresh: bool = False,
                   stage_began: bool = False) -> ResultGrid:
    """The search's results: read back when the search is over or the stage began, else fitted."""
    mark = None if fresh or stage_began else location.read_json_object(SEARCH_FILE, "whether the search is over")
    if not fresh and (stage_began or (mark or {}).get("bounds") == search_bounds(config)):
        return tuner.get_results()
    return tuner.fit()
