"""A space bound to a sweep: its first point and presets from the method config's defaults for the sweep's
settings, its conditions on fields it does not sample read from those settings, and the method's own rules.

The first point is the method's config validated from the settings every trial shares (``fixed``, the model, the
data), read at the sampled entries: so it is the paper's setting for that sweep (CoSENT's NLI setting with
``train_data: snli``, SNCSE's lr and batch size by model size). A default a method resolves later (SNCSE's lambda by
model family) comes from the method's hook (:data:`METHOD_DEFAULTS`). A default outside a narrowed range is left to
the sampler. Methods may also refuse a space that cannot work under the sweep's settings (:data:`METHOD_CHECKS`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from sentsweep.errors import ConfigError
from sentsweep.search_spaces.spec import SearchSpaceSpec
from sentsweep.search_spaces.yaml_space import YamlSpace

#: A method's defaults that its config leaves unset until training (by name), given the config and the entries the
#: space samples.
DefaultsHook = Callable[[BaseModel, list[str]], dict[str, Any]]
#: A method's refusal of a space under a sweep's settings: a ConfigError, or nothing.
CheckHook = Callable[[SearchSpaceSpec, YamlSpace, Mapping[str, Any]], None]


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
        check_hooks[spec.method](spec, space, defaults)
    source = {**defaults, **spec.definition.first_point}
    first = space.point(source)
    for name, value in spec.definition.first_point.items():
        if name not in first:
            raise ConfigError(f"{value!r} is not a value the space gives {name} on the first point's branch",
                              field=f"search_space.first_point.{name}")
    extras: list[dict[str, Any]] = []
    for point in [*space.grid_points(source), *(space.point({**source, **e}) for e in spec.definition.extra_points)]:
        if point != first and point not in extras:
            extras.append(point)
    return replace(spec, define_by_run=space, first_point=first, extra_points=tuple(extras))
