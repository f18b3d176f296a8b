"""Search spaces: YAML in Ray Tune's sampling names, shipped by name or written in a sweep config.

>>> from sentsweep.search_spaces import SEARCH_SPACES
>>> SEARCH_SPACES["cosent"].first_point["scale"]
20.0

The shipped spaces are the files of ``shipped/`` (one per name). A sweep's ``search_space`` is a name, or a mapping
of the method's config fields to distributions (:mod:`.sampling`), optionally on top of a shipped space
(``base: NAME``); :func:`space_for` reads either, checked against the method's config (:mod:`.checks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from sentsweep.errors import ConfigError
from sentsweep.search_spaces.python_space import PythonSpace
from sentsweep.search_spaces.sampling import SpaceSyntaxError
from sentsweep.search_spaces.spec import DefineByRun, SearchSpaceSpec
from sentsweep.search_spaces.yaml_space import RESERVED, SpaceDefinition, YamlSpace, parse_definition

#: Where the shipped spaces are (package data).
SHIPPED = resources.files(__name__) / "shipped"
#: The name of a space written in a sweep config (``BASE+custom`` when it starts from a shipped one).
CUSTOM = "custom"


def _definition(raw: Mapping[str, Any], method: str, base: SpaceDefinition | None, where: str,
                source: str | Path | None) -> SpaceDefinition:
    """A space mapping read and checked against ``method``'s config; a ConfigError names the entry and ``source``."""
    from sentsweep.search_spaces.checks import check_definition
    from sentsweep.trainables.registry import get_method

    try:
        return check_definition(parse_definition(raw, base), get_method(method).config_cls)
    except SpaceSyntaxError as exc:
        raise ConfigError(str(exc), field=f"{where}.{exc.field}", file=source) from None


def _load_shipped() -> dict[str, SearchSpaceSpec]:
    from sentsweep.yaml_io import read_yaml

    raw = {f.name.removesuffix(".yaml"): f for f in SHIPPED.iterdir() if f.name.endswith(".yaml")}
    spaces: dict[str, SearchSpaceSpec] = {}

    def load(name: str) -> SearchSpaceSpec:
        if name not in spaces:
            with resources.as_file(raw[name]) as path:
                text = read_yaml(path)
            base = load(text["base"]).definition if text.get("base") else None
            entries = {**text["space"], **{k: text[k] for k in RESERVED if k in text and k != "base"}}
            definition = _definition(entries, text["method"], base, "space", raw[name].name)
            spaces[name] = SearchSpaceSpec(name, text["method"], definition, text.get("description", ""))
        return spaces[name]

    for name in sorted(raw):
        load(name)
    return {name: spec.for_settings({}) for name, spec in spaces.items()}


SEARCH_SPACES: dict[str, SearchSpaceSpec] = _load_shipped()


def get_search_space(name: str) -> SearchSpaceSpec:
    """The space called ``name``; an unknown name raises ConfigError listing the known ones."""
    try:
        return SEARCH_SPACES[name]
    except KeyError:
        raise ConfigError(
            f"unknown search space '{name}'; known: {', '.join(SEARCH_SPACES)}", field="search_space"
        ) from None


def space_for(search_space: str | Mapping[str, Any], method: str, source: str | Path | None = None) -> SearchSpaceSpec:
    """The space a sweep config's ``search_space`` names or writes (unbound: see ``SearchSpaceSpec.for_settings``);
    a mistake is one ConfigError naming the entry (``search_space.lr``) and ``source``."""
    if isinstance(search_space, str):
        space = get_search_space(search_space)
        if space.method != method:
            raise ConfigError(f"search space '{space.name}' is for method '{space.method}', not '{method}'",
                              field="search_space", file=source)
        return space
    base_name = search_space.get("base")
    base = None
    if base_name is not None:
        base = space_for(str(base_name), method, source)
    definition = _definition(search_space, method, base.definition if base else None, "search_space", source)
    name = f"{base.name}+{CUSTOM}" if base else CUSTOM
    return SearchSpaceSpec(name, method, definition, base.description if base else "written in the sweep config")


__all__ = ["CUSTOM", "SEARCH_SPACES", "DefineByRun", "PythonSpace", "SearchSpaceSpec", "YamlSpace", "get_search_space",
           "space_for"]
