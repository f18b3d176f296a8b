"""A search space read from YAML: its entries (:mod:`.sampling`), its first point and presets, and the Optuna
define-by-run function a sweep's searcher calls (:class:`YamlSpace`).

A space is written the same way in a sweep config (``search_space:`` as a mapping) and in the files shipped in
``sentsweep/search_spaces/shipped/``. Besides the fields of the method's config, three keys are reserved:

- ``base``: a registered space to start from; the other entries replace its entries of the same field (fixing
  or narrowing them) or add new ones;
- ``first_point``: values of the first trial that differ from the config's defaults;
- ``extra_points``: further points evaluated right after the first one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import optuna

from sentsweep.search_spaces.sampling import Param, SpaceSyntaxError, parse_entry

#: The keys of a space mapping that are not fields of the method's config.
RESERVED = ("base", "first_point", "extra_points")
#: What an unset field reads as in a condition (never equal to a value a user can write).
_UNSET = object()


@dataclass(frozen=True)
class YamlSpace:
    """The define-by-run function of a space: suggests each entry that applies, in order, on an Optuna trial and
    returns the fixed entries. ``settings`` are the sweep's values of the fields its conditions read but it does
    not search. A frozen dataclass of plain values: Tune pickles it with the searcher into the sweep folder."""

    params: tuple[Param, ...]
    settings: tuple[tuple[str, Any], ...] = ()

    def __call__(self, trial: optuna.Trial) -> dict[str, Any]:
        values: dict[str, Any] = dict(self.settings)
        constants: dict[str, Any] = {}
        for param in self.params:
            if not param.applies(values, _UNSET):
                continue
            if param.fixed:
                constants[param.name] = values[param.name] = param.values[0]
            else:
                values[param.name] = param.suggest(trial, values)
        return constants

    @property
    def constants(self) -> dict[str, Any]:
        """The fixed entries that hold whatever is sampled (no condition)."""
        return {p.name: p.values[0] for p in self.params if p.fixed and not p.when}

    def point(self, source: Mapping[str, Any]) -> dict[str, Any]:
        """The searched values of the branch ``source`` takes: each entry that applies, with ``source``'s value where
        the entry can give it; one it cannot give is left to the sampler."""
        values: dict[str, Any] = dict(self.settings)
        point: dict[str, Any] = {}
        for param in self.params:
            if not param.applies(values, _UNSET):
                continue
            if param.fixed:
                values[param.name] = param.values[0]
            elif param.name in source and param.holds(source[param.name], values):
                point[param.name] = values[param.name] = source[param.name]
        return point

    def grid_points(self, source: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every combination of the ``grid`` entries' values, the other entries as ``source`` has them."""
        grids = [p for p in self.params if p.kind == "grid"]
        if not grids:
            return []
        combos = itertools.product(*(p.values for p in grids))
        return [self.point({**source, **dict(zip([p.name for p in grids], combo, strict=True))}) for combo in combos]

    def can_search(self) -> list[str]:
        """The sampled entries whose condition can hold under ``settings``."""
        settings = dict(self.settings)
        return [p.name for p in self.params if not p.fixed
                and all(settings[f] in allowed for f, allowed in p.when if f in settings)]

    def describe(self) -> list[str]:
        """One line per entry, as written (``lr: loguniform [5e-06, 0.0001]``)."""
        settings = dict(self.settings)
        lines = []
        for p in self.params:
            off = [f for f, allowed in p.when if f in settings and settings[f] not in allowed]
            note = f"  (not searched: {off[0]} is {settings[off[0]]!r})" if off else ""
            lines.append(f"{p.name}: {p.describe()}{note}")
        return lines


@dataclass(frozen=True)
class SpaceDefinition:
    """A space as written: its entries in order, the first point's own values and the presets."""

    params: tuple[Param, ...]
    first_point: dict[str, Any] = field(default_factory=dict)
    extra_points: tuple[dict[str, Any], ...] = ()

    def with_entries(self, entries: Mapping[str, Any], first_point: Mapping[str, Any] | None = None,
                     extra_points: Sequence[Mapping[str, Any]] | None = None) -> SpaceDefinition:
        """This space with ``entries`` replacing its entries of the same field (in place) or added after them; its
        first point and presets keep the values of fields still sampled, then ``first_point`` and ``extra_points``
        (when given) are applied."""
        new = {name: parse_entry(name, raw) for name, raw in entries.items()}
        params = [new.pop(p.name, p) for p in self.params] + list(new.values())
        sampled = {p.name for p in params if not p.fixed}
        first = {k: v for k, v in self.first_point.items() if k in sampled} | dict(first_point or {})
        if extra_points is None:
            extras = tuple(dict(e) for e in self.extra_points if set(e) <= sampled)
        else:
            extras = tuple(dict(e) for e in extra_points)
        return SpaceDefinition(tuple(params), first, extras)


def parse_definition(raw: Mapping[str, Any], base: SpaceDefinition | None = None) -> SpaceDefinition:
    """A space mapping (the fields, plus the :data:`RESERVED` keys but ``base``, already looked up) read into a
    definition; a :class:`~.sampling.SpaceSyntaxError` names the entry that cannot be read."""
    entries = {str(k): v for k, v in raw.items() if k not in RESERVED}
    first = raw.get("first_point") or {}
    if not isinstance(first, Mapping):
        raise SpaceSyntaxError("first_point", f"expected a mapping of FIELD: VALUE, got {first!r}")
    extras = raw.get("extra_points")
    if extras is not None and (not isinstance(extras, list) or not all(isinstance(e, Mapping) for e in extras)):
        raise SpaceSyntaxError("extra_points", f"expected a list of mappings of FIELD: VALUE, got {extras!r}")
    return (base or SpaceDefinition(())).with_entries(entries, first, extras)
