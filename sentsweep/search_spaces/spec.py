"""A named search space of one method: its definition as written, and, once bound to a sweep's settings, the
define-by-run function, the first point and the presets the searcher evaluates first."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import optuna

from sentsweep.search_spaces.yaml_space import SpaceDefinition, YamlSpace

#: An Optuna define-by-run function: suggests on a trial, may return settings to merge into the trial config.
DefineByRun = Callable[[optuna.Trial], dict[str, Any] | None]


@dataclass(frozen=True)
class SearchSpaceSpec:
    """A space for one method.

    ``definition`` is the space as written (:mod:`.yaml_space`). ``define_by_run`` suggests the sampled entries on
    an Optuna trial (an entry with a condition only where it holds) and returns the fixed ones. ``first_point`` is
    evaluated first: the method config's defaults for the sweep's settings (the paper's setting), except where the
    space's own ``first_point`` says otherwise; it names exactly the entries sampled on its branch.
    ``extra_points`` follow it (the grid's combinations, then the space's presets). A registered space is bound to
    the method's defaults; :meth:`for_settings` binds it to a sweep's.
    """

    name: str
    method: str
    definition: SpaceDefinition
    description: str = ""
    define_by_run: YamlSpace = field(default_factory=lambda: YamlSpace(()))
    first_point: dict[str, Any] = field(default_factory=dict)
    extra_points: tuple[dict[str, Any], ...] = ()

    def for_settings(self, settings: Mapping[str, Any]) -> SearchSpaceSpec:
        """The space a sweep whose trials share ``settings`` runs (:func:`.binding.bind`)."""
        from sentsweep.search_spaces.binding import bind

        return bind(self, settings)

    @property
    def fixed(self) -> dict[str, Any]:
        """The fields the space fixes in every trial."""
        return YamlSpace(self.definition.params).constants

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        """The settings this space gives on ``trial`` (suggestions plus fixed entries)."""
        constants = self.define_by_run(trial) or {}
        return {**trial.params, **constants}

    def describe(self) -> list[str]:
        """One line per entry of the bound space (``lr: loguniform [5e-06, 0.0001]``)."""
        return self.define_by_run.describe() if self.define_by_run.params else \
            YamlSpace(self.definition.params).describe()
