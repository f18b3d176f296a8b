"""A space given as a Python define-by-run function, for the Python API (``run_sweep(config, space=...)``) and for
test doubles: what YAML cannot say, such as settings that depend on the trial's number."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import optuna

from sentsweep.search_spaces.spec import DefineByRun


@dataclass(frozen=True)
class PythonSpace:
    """``define_by_run`` suggests on an Optuna trial and may return settings to merge into the trial config;
    ``first_point`` names exactly what it suggests on that branch. It runs as given, whatever the sweep's settings."""

    name: str
    method: str
    define_by_run: DefineByRun
    first_point: dict[str, Any]
    description: str = ""
    extra_points: tuple[dict[str, Any], ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)

    def for_settings(self, settings: Mapping[str, Any]) -> PythonSpace:
        """This space: a Python space does not depend on the sweep's settings."""
        return self

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        """The settings this space gives on ``trial`` (suggestions plus returned settings)."""
        return {**trial.params, **(self.define_by_run(trial) or {})}

    def describe(self) -> list[str]:
        """The function's name and the first point's fields."""
        function = getattr(self.define_by_run, "__name__", type(self.define_by_run).__name__)
        return [f"{function}() over {', '.join(self.first_point)}"]
