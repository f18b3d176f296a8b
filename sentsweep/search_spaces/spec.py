"""The shape of a search space: an Optuna define-by-run function plus its first point, the config's defaults."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import optuna
from pydantic import BaseModel

DefineByRun = Callable[[optuna.Trial], dict[str, Any] | None]


@dataclass(frozen=True)
class SearchSpaceSpec:
    """A named space for one method.

    ``define_by_run`` suggests the searched parameters on an Optuna trial (conditional parameters are
    suggested only when they apply) and may return constants to merge into the trial config.
    ``first_point`` is the paper's setting, evaluated first (``points_to_evaluate``); it names exactly
    the parameters ``define_by_run`` suggests on that branch. ``for_sweep`` (optional) is the space a sweep
    runs, given the settings every trial of it shares (``fixed`` plus the sweep's model): where the paper's
    setting or what is searched depends on them (CoSENT's NLI setting by model family, the cross-encoder
    without pooling), it returns a copy with its own first points and function, or raises ConfigError;
    without it the registered space is the one a sweep runs.
    """

    name: str
    method: str
    define_by_run: DefineByRun
    first_point: dict[str, Any]
    description: str = ""
    extra_points: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    for_sweep: Callable[[SearchSpaceSpec, Mapping[str, Any]], SearchSpaceSpec] | None = None

    def for_settings(self, settings: Mapping[str, Any]) -> SearchSpaceSpec:
        """The space a sweep whose trials share ``settings`` runs (see ``for_sweep``)."""
        return self if self.for_sweep is None else self.for_sweep(self, settings)

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        """The full trial config this space gives on ``trial`` (suggestions plus returned constants)."""
        constants = self.define_by_run(trial) or {}
        return {**trial.params, **constants}


def default_point(config_cls: type[BaseModel], *names: str, **values: Any) -> dict[str, Any]:
    """The defaults of ``config_cls`` for ``names`` (by their YAML names, in the form a space suggests
    them: a view pair as ``"dep+const"``), then ``values``: a space's first point, read from the one
    place the defaults are written."""
    return config_point(config_cls(), *names, **values)


def config_point(config: BaseModel, *names: str, **values: Any) -> dict[str, Any]:
    """``config``'s values for ``names`` (YAML names, as a space suggests them), then ``values``: the first
    point of a sweep whose shared settings change the defaults (``SearchSpaceSpec.for_sweep``)."""
    dumped = config.model_dump(by_alias=True)
    return {**{name: dumped[name] for name in names}, **values}
