"""A named search space of one method: its definition as written, and, once bound to a sweep's settings, the
define-by-run function, the first point and the presets the searcher evaluates first.

A sweep binds its space (:func:`bind`): the first point and presets come from the method config's defaults for the
sweep's settings, and conditions on fields the space does not sample read those settings. The first point is the
method's config validated from the settings every trial shares (``fixed``, the model, the data), read at the sampled
entries. So it is the paper's setting for that sweep: CoSENT's NLI setting with ``train_data: snli``, SNCSE's lr and
batch size by model size. A default a method resolves only at training (SNCSE's lambda by model family) comes from
the method's hook (:func:`sentsweep.search_spaces.sncse.sncse_defaults`). A default outside a narrowed range is left
to the sampler. A method may refuse a space that cannot work under the sweep's settings
(:func:`sentsweep.search_spaces.cosent.check_cosent_space`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import optuna
from pydantic import BaseModel

from sentsweep.errors import ConfigError
from sentsweep.search_spaces.yaml_space import SpaceDefinition, YamlSpace

logger = logging.getLogger(__name__)

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
        """The space a sweep whose trials share ``settings`` runs (:func:`bind`)."""
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


#: A method's defaults that its config leaves unset until training (by name), given the config and the entries the
#: space samples.
DefaultsHook = Callable[[BaseModel, list[str]], dict[str, Any]]
#: A method's refusal of a space under a sweep's settings: a ConfigError, or nothing.
CheckHook = Callable[[str, YamlSpace, Mapping[str, Any]], None]


def _hooks() -> tuple[dict[str, DefaultsHook], dict[str, CheckHook]]:
    from sentsweep.search_spaces.cosent import check_cosent_space
    from sentsweep.search_spaces.sncse import sncse_defaults

    return {"sncse": sncse_defaults}, {"cosent": check_cosent_space}


def bind(spec: SearchSpaceSpec, settings: Mapping[str, Any]) -> SearchSpaceSpec:
    """``spec`` as a sweep whose trials share ``settings`` runs it (see the module docstring). A first point the
    space names that the space cannot give, or a space that samples nothing under ``settings``, is a ConfigError
    naming ``search_space``; settings the method's config refuses raise pydantic's ValidationError."""
    from sentsweep.trainables.registry import get_method

    defaults_hooks, check_hooks = _hooks()
    params = spec.definition.params
    config = get_method(spec.method).config_cls.model_validate({**settings, **YamlSpace(params).constants})
    defaults = config.model_dump(by_alias=True)
    sampled = [p.name for p in params if not p.fixed]
    if spec.method in defaults_hooks:
        defaults.update(defaults_hooks[spec.method](config, sampled))
    read = sorted({f for p in params for f, _ in p.when} - {p.name for p in params})
    space = YamlSpace(params, tuple((f, defaults.get(f)) for f in read))
    if not space.can_search():
        off = [f"{p.name} ({p.describe()})" for p in params if not p.fixed]
        raise ConfigError(f"space '{spec.name}' samples nothing under this sweep's settings: "
                          f"{', '.join(off) or 'every entry is fixed'}", field="search_space")
    if spec.method in check_hooks:
        check_hooks[spec.method](spec.name, space, defaults)
    source = {**defaults, **spec.definition.first_point}
    first = space.point(source)
    for name, value in spec.definition.first_point.items():
        if name not in first:
            raise ConfigError(f"{value!r} is not a value the space gives {name} on the first point's branch",
                              field=f"search_space.first_point.{name}")
    extras: list[dict[str, Any]] = []
    presets = [space.point({**source, **e}) for e in spec.definition.extra_points]
    for index, (given, point) in enumerate(zip(spec.definition.extra_points, presets, strict=True)):
        if dropped := [f"{name} {value!r}" for name, value in given.items() if name not in point]:
            logger.warning("search_space.extra_points[%d]: the space does not give %s on this point's branch; the "
                           "point runs without %s", index, ", ".join(dropped), "it" if len(dropped) == 1 else "them")
    for point in [*space.grid_points(source), *presets]:
        if point != first and point not in extras:
            extras.append(point)
    return replace(spec, define_by_run=space, first_point=first, extra_points=tuple(extras))
