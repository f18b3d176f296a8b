"""Multi-objective sweeps: the ``objectives:`` of a sweep config, each objective's value in a trial's report, and the
Pareto front: a point *a* dominates *b* when it is at least as good in every objective and strictly better in one
(Deb et al., 2002, NSGA-II, Sec. III-A)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sentsweep.errors import ConfigError
from sentsweep.trainables.method import GPUS_KEY
from sentsweep.trainables.trial_config import DEV_SETS

#: The cost objectives, derived from a report's seconds and GPUs.
COST_METRICS = ("compute_seconds", "gpu_seconds")
#: Tune's running total of a trial's seconds, in every result (continued from the checkpoint after a restore).
TIME_TOTAL_KEY = "time_total_s"
#: What each cost objective measures, for axis labels.
_UNITS = {"compute_seconds": "s x GPUs held; CPU trials: s", "gpu_seconds": "s x GPUs held"}


@dataclass(frozen=True)
class Objective:
    """One objective: a metric and whether it is maximised or minimised."""

    metric: str
    mode: Literal["max", "min"]

    def __str__(self) -> str:
        return f"{self.metric} {self.mode}"

    @property
    def label(self) -> str:
        """An axis label: the metric, its unit, and its direction."""
        what = _UNITS.get(self.metric, "dev")
        return f"{self.metric} ({what}; {'higher' if self.mode == 'max' else 'lower'} is better)"

    def better(self, a: float, b: float) -> bool:
        return a > b if self.mode == "max" else a < b


def parse_objective(text: str, where: str = "objectives") -> Objective:
    """``"METRIC max"`` or ``"METRIC min"``; a :class:`ConfigError` naming ``where`` otherwise."""
    parts = str(text).split()
    if len(parts) != 2:
        raise ConfigError(f"'{text}' is not 'METRIC max' or 'METRIC min'", field=where)
    metric, mode = parts
    if mode not in ("max", "min"):
        raise ConfigError(f"unknown mode '{mode}' for '{metric}': use max or min", field=where)
    return Objective(metric, mode)  # type: ignore[arg-type]


def check_objectives(entries: Sequence[str], dev_data: str = "stsb", gpus: float = 0.0) -> tuple[Objective, ...]:
    """The objectives of a config's ``objectives:`` list, checked; a ConfigError names the entry that fails."""
    if len(entries) < 2:
        raise ConfigError("list at least 2 ('METRIC max|min' each); a single one is metric and mode",
                          field="objectives")
    objectives = tuple(parse_objective(e, f"objectives.{i}") for i, e in enumerate(entries))
    dev = DEV_SETS.get(dev_data, DEV_SETS["stsb"])
    reported = (*dict.fromkeys([dev, *DEV_SETS.values()]), *COST_METRICS)
    for i, objective in enumerate(objectives):
        where = f"objectives.{i}"
        if objective.metric in (o.metric for o in objectives[:i]):
            raise ConfigError(f"'{objective.metric}' is listed twice", field=where)
        if i == 0 and objective.metric != dev:
            raise ConfigError(f"the first objective is the one ASHA, Tune and the winner rank by; it must be the "
                              f"trial's dev metric '{dev}', not '{objective.metric}'", field=where)
        if objective.metric not in reported:
            raise ConfigError(f"no trial reports '{objective.metric}' at its evaluations; an objective is one of "
                              f"{', '.join(reported)}", field=where)
        if objective.metric == "gpu_seconds" and gpus <= 0:
            raise ConfigError("the trials hold no GPU (resources.gpu: 0), so gpu_seconds is always 0; use "
                              "compute_seconds", field=where)
    return objectives


def extra_dev_sets(objectives: Sequence[Objective]) -> list[str]:
    """The ``dev_data`` names of the dev metrics among the objectives after the first (``extra_dev_data``)."""
    by_metric = {metric: name for name, metric in DEV_SETS.items()}
    return [by_metric[o.metric] for o in objectives[1:] if o.metric in by_metric]


def select_report(current: Mapping[str, Any] | None, report: Mapping[str, Any],
                  first: Objective) -> Mapping[str, Any] | None:
    """``report`` when its first objective is finite and better than ``current``'s (as the loop keeps its best)."""
    value = report.get(first.metric)
    if value is None or not math.isfinite(float(value)):
        return current
    return report if current is None or first.better(float(value), float(current[first.metric])) else current


def objective_value(result: Mapping[str, Any], objective: Objective,
                    selected: Mapping[str, Any] | None = None) -> float | None:
    """``objective``'s value in a Tune result (else in ``selected``), or its cost from the seconds and GPUs."""
    if objective.metric not in COST_METRICS:
        value = result.get(objective.metric)
        if value is None and selected is not None:
            value = selected.get(objective.metric)
        return None if value is None else float(value)
    if (seconds := result.get(TIME_TOTAL_KEY)) is None:
        return None
    gpus = float(result.get(GPUS_KEY) or 0.0)
    return float(seconds) * gpus if gpus > 0 or objective.metric == "gpu_seconds" else float(seconds)


def objective_values(result: Mapping[str, Any], objectives: Sequence[Objective],
                     selected: Mapping[str, Any] | None = None) -> list[float | None]:
    return [objective_value(result, o, selected) for o in objectives]


def dominates(a: Sequence[float], b: Sequence[float], modes: Sequence[str]) -> bool:
    """Whether ``a`` dominates ``b`` under ``modes`` (``max``/``min`` each)."""
    if not len(a) == len(b) == len(modes):
        raise ValueError(f"points of {len(a)} and {len(b)} values for {len(modes)} objectives")
    if any(m not in ("max", "min") for m in modes):
        raise ValueError(f"modes are max or min, not {list(modes)}")
    return all(x >= y if m == "max" else x <= y for x, y, m in zip(a, b, modes, strict=True)) and \
        any(x != y for x, y in zip(a, b, strict=True))


def pareto_front(points: Sequence[Sequence[float]], modes: Sequence[str]) -> list[int]:
    """The indices, in order, of the points no other point dominates; a point with a NaN is never on it."""
    usable = [i for i, p in enumerate(points) if all(math.isfinite(float(v)) for v in p)]
    return [i for i in usable if not any(dominates(points[j], points[i], modes) for j in usable if j != i)]
