"""How the platform reads a trial's Tune results (the final report, a failure, a draining report, a metric, how the
trial ended), and whether a study's trial came from a warm start."""

from __future__ import annotations

import math
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from sentsweep._compat.ray import trial_number
from sentsweep.tracking.names import SEARCH_PREFIX, trial_label
from sentsweep.trainables.report_keys import (
    DRAINING_KEY,
    EVALUATIONS_KEY,
    FAILED_KEY,
    FAILURE_REASON_KEY,
    INFEASIBLE_KEY,
    INFEASIBLE_KINDS,
    TOTAL_STEPS_KEY,
    InfeasibleKind,
)

if TYPE_CHECKING:
    from optuna import Study
    from optuna.trial import FrozenTrial
    from ray.tune import Result, ResultGrid


#: The key a trainable's last report carries once the trial has run to its end.
FINAL_KEY = "final"


def is_final(result: Mapping[str, Any] | None) -> bool:
    return bool(result) and result.get(FINAL_KEY) == 1.0


#: The key the budget's stopper sets on the report at which it stops a trial. Tune marks that report ``done`` as it
#: marks a scheduler's stop, so without the key a trial the budget stopped would read as pruned.
BUDGET_STOP_KEY = "stopped_by_budget"
Ended = Literal["finished", "pruned", "stopped", "not started", "failed"]
#: How an ended trial can have ended (:func:`trial_end`), in the order counts and lines name them.
ENDED_OUTCOMES: tuple[Ended, ...] = ("finished", "pruned", "stopped", "not started", "failed")
#: The outcomes a line of counts names only when some trial ended so (:func:`counts_text`).
NAMED_WHEN_SEEN = frozenset({"stopped", "not started"})


def trial_end(result: Mapping[str, Any] | None, error: bool = False) -> Ended:
    """How a trial whose last report is ``result`` ended, the one rule the counts, lines and runs follow: ``failed``
    (``error``: Tune's, or a failed report), ``finished`` (its final report), ``not started`` (ended before its first
    report: no ``training_iteration``), ``pruned`` (its scheduler stopped it: Tune marked the report ``done``), else
    ``stopped`` (the budget or the time limit, which end a trial between reports, or the budget's stopper at a
    report)."""
    if error or is_failed(result):
        return "failed"
    if is_final(result):
        return "finished"
    if not result or not result.get("training_iteration"):
        return "not started"
    return "pruned" if result.get("done") and not result.get(BUDGET_STOP_KEY) else "stopped"


def outcome_counts(results: Iterable[Result]) -> dict[str, int]:
    """How many of Tune's ``results`` ended each way (:data:`ENDED_OUTCOMES`, every one named)."""
    counts = dict.fromkeys(ENDED_OUTCOMES, 0)
    for result in results:
        counts[trial_end(result.metrics, error=result.error is not None)] += 1
    return counts


def counts_text(counts: Mapping[str, int]) -> str:
    """``counts`` in their order as a line says them (``3 finished, 1 pruned, 0 failed``): ``stopped`` and ``not
    started`` only when some trial ended so."""
    return ", ".join(f"{n} {outcome}" for outcome, n in counts.items() if n or outcome not in NAMED_WHEN_SEEN)


def is_last_evaluation(result: Mapping[str, Any] | None) -> bool:
    """Whether a report is the evaluation at the trial's last step: it trained every step, and its final report
    follows."""
    total, step = (result or {}).get(TOTAL_STEPS_KEY), (result or {}).get("step")
    return total is not None and step is not None and not is_draining(result) and float(step) >= float(total)


def is_failed(result: Mapping[str, Any] | None) -> bool:
    """Whether a result is the terminal report of a deterministic failure."""
    return bool(result) and result.get(FAILED_KEY) == 1.0


def infeasibility(result: dict[str, Any] | None) -> InfeasibleKind | None:
    """Why a failed trial's settings are infeasible (``diverged``, ``out_of_memory``), or None."""
    kind = (result or {}).get(INFEASIBLE_KEY) if is_failed(result) else None
    return kind if kind in INFEASIBLE_KINDS else None


def failure_reason(result: dict[str, Any] | None) -> str:
    return str((result or {}).get(FAILURE_REASON_KEY) or "failed")


def is_draining(result: Mapping[str, Any] | None) -> bool:
    return bool(result) and result.get(DRAINING_KEY) == 1.0


def evaluation_result(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with ``training_iteration`` counting the trial's evaluations as the trial counts them, from the
    state it restored: Tune's own count also counts draining reports, and is off after a checkpoint fallback."""
    if (evaluations := result.get(EVALUATIONS_KEY)) is None or "training_iteration" not in result:
        return result
    return {**result, "training_iteration": int(evaluations)}


def finite_number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def metric_value(result: Result, metric: str) -> float | None:
    """The trial's last value of ``metric`` when finite."""
    return finite_number((result.metrics or {}).get(metric))


def result_trial_id(result: Result) -> str:
    """The trial id a result reported (its folder's name when it reported none)."""
    return str((result.metrics or {}).get("trial_id", posixpath.basename(result.path.rstrip("/"))))


def creation_numbers(trials: Sequence[Any]) -> dict[str, int]:
    """Trial id -> its number in the order Tune created it (1, 2, ...), for Tune ``Trial`` objects or result dicts:
    Tune's own count survives a restore that reorders the trials (a trial without it keeps its place in the list)."""
    ordered = sorted(trials, key=lambda t: (trial_number(t) is None, trial_number(t) or 0))
    return {str(t["trial_id"] if isinstance(t, dict) else t.trial_id): n for n, t in enumerate(ordered, 1)}


def result_labels(results: Iterable[Result] | None, prefix: str = SEARCH_PREFIX) -> dict[str, str]:
    """Trial id -> its label (``t03``, ``c02`` with ``prefix``) by the order Tune created ``results``."""
    numbers = creation_numbers([r.metrics for r in results or [] if (r.metrics or {}).get("trial_id")])
    return {trial_id: trial_label(number, prefix) or trial_id for trial_id, number in numbers.items()}


def rank_results(results: ResultGrid, metric: str, mode: str) -> list[Result]:
    """Trials without an error that reported ``metric``, best first: finished ones, then pruned ones."""
    ok = [r for r in results if r.error is None and metric_value(r, metric) is not None]
    sign = -1.0 if mode == "max" else 1.0
    return sorted(ok, key=lambda r: (not is_final(r.metrics), sign * (metric_value(r, metric) or 0.0)))


#: Final figures recorded per seed besides the sweep's metric (test suites, averages, SentEval's).
FIGURE_SUFFIXES = ("_test", "_all", "_avg7", "_avg", "_acc", "_f1", "_pearson", "_spearman", "_mse")


def is_reference(trial_config: Mapping[str, Any] | None, point: Mapping[str, Any] | None) -> bool:
    """Whether a trial's settings hold every setting of the reference ``point``."""
    return bool(point and trial_config) and all(k in trial_config and trial_config[k] == v for k, v in point.items())


#: The user attribute of a study's trial that came from an earlier sweep (its name).
WARM_START_ATTR = "warm_start_from"


def is_warm_start(trial: FrozenTrial) -> bool:
    """Whether a trial of a study came from an earlier sweep."""
    return WARM_START_ATTR in trial.user_attrs


def searched_keys(study: Study | None, results: Iterable[Any]) -> list[str]:
    """The settings the search space samples: every parameter of the study's trials, in the order first sampled,
    whether or not its values differ; without a study, the settings that differ between ``results``."""
    if study is None:
        return varying_keys(results)
    return list(dict.fromkeys(k for t in study.get_trials(deepcopy=False) for k in t.params))


def varying_keys(results: Iterable[Any], skip: tuple[str, ...] = ("tracking",)) -> list[str]:
    """The trial settings (but ``skip``) that differ between the trials of ``results``, in order of appearance."""
    configs = [r.config or {} for r in results]
    keys = dict.fromkeys(k for c in configs for k in c if k not in skip)
    return [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]
