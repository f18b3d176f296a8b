"""The shape of a search space: an Optuna define-by-run function plus its first point, the config's defaults."""

from __future__ import annotations

from collections.abc import Callable
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
    the parameters ``define_by_run`` suggests on that branch.
    """

    name: str
    method: str
    define_by_run: DefineByRun
    first_point: dict[str, Any]
    description: str = ""
    extra_points: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        """The full trial config this space gives on ``trial`` (suggestions plus returned constants)."""
        constants = self.define_by_run(trial) or {}
        return {**trial.params, **constants}


def default_point(config_cls: type[BaseModel], *names: str, **values: Any) -> dict[str, Any]:
    """The defaults of ``config_cls`` for ``names`` (by their YAML names, in the form a space suggests
    them: a view pair as ``"dep+const"``), then ``values``: a space's first point, read from the one
    place the defaults are written."""
    defaults = config_cls().model_dump(by_alias=True)
    return {**{name: defaults[name] for name in names}, **values}
