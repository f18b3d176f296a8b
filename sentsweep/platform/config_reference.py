"""The configuration reference (``docs/configuration.md``), generated from the typed configs' fields: one table
per part of the sweep config and per method config, then the search-space syntax and the shipped spaces.
``sentsweep config reference`` prints it; a test fails when the file in the repository differs."""

from __future__ import annotations

import re
import typing
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

#: The file the reference is written to, relative to the repository root.
REFERENCE_PATH = "docs/configuration.md"
COMMAND = "sentsweep config reference > docs/configuration.md"

_INTRO = f"""# Configuration reference

<!-- Generated from the typed configs by `{COMMAND}` (make config-reference). Do not edit. -->

A sweep is one YAML file (see `configs/demo.yaml`). Every field below may be left out: it then keeps its default.
Trial settings (Method configs) go under the sweep's `fixed:`, the same in every trial, or in its `search_space:`.
`sentsweep sweep CONFIG --check` validates a file without running it. A mistake is one line naming the field and
the file.
"""
_NAMES = {int: "integer", float: "number", str: "text", bool: "true/false", type(None): "null"}
#: The bounds a field's metadata may carry (``annotated_types``' Ge, Gt, Le and Lt), and how the table writes them.
_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _type(annotation: Any) -> tuple[str, list[Any]]:
    """A field's type in words, and its allowed values when it lists them (a Literal)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return _NAMES.get(type(args[0]), type(args[0]).__name__), list(args)
    if origin in (typing.Union, __import__("types").UnionType):
        parts = [_type(a) for a in args]
        return " or ".join(dict.fromkeys(p[0] for p in parts)), [v for p in parts for v in p[1]]
    if origin in (list, tuple):
        inner, allowed = _type(args[0])
        return f"list of {inner}", allowed
    if origin is dict:
        return "mapping", []
    name = getattr(annotation, "__name__", str(annotation))
    return _NAMES.get(annotation, "view pair" if name == "ViewPair" else name), []


def _value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple) and not hasattr(value, "_fields"):  # a named tuple has its own str()
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    default = info.get_default(call_default_factory=True)
    text = _value(default)
    return f"`{text}`" if text else '`""`'


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _row(name: str, info: FieldInfo, described: FieldInfo | None = None) -> str:
    kind, allowed = _type(info.annotation)
    bounds = [f"{sign} {value:g}" for meta in info.metadata for attr, sign in _BOUNDS.items()
              if (value := getattr(meta, attr, None)) is not None]
    allowed_text = ", ".join(f"`{_value(v)}`" for v in allowed if v is not None) or ", ".join(bounds)
    meaning = info.description or (described.description if described else "") or ""
    return f"| `{name}` | {kind} | {_default(info)} | {_cell(allowed_text)} | {_cell(meaning)} |"


_HEADER = "| field | type | default | allowed | meaning |\n|---|---|---|---|---|"


def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return {info.alias or name: info for name, info in model.model_fields.items() if not info.exclude}


def _doc(model: type[BaseModel]) -> str:
    """The first paragraph of a config's docstring, its reStructuredText roles and literals as Markdown code."""
    text = (model.__doc__ or "").strip().split("\n\n")[0]
    text = re.sub(r":(?:mod|class|func|data|meth):`~?([^`]+)`", r"`\1`", text)
    return _cell(text.replace("``", "`"))


def sweep_tables() -> list[str]:
    """The sweep config's top-level fields, then one table per section."""
    from sentsweep.platform.config import SweepConfig

    fields = _fields(SweepConfig)
    sections = {name: info.annotation for name, info in fields.items()
                if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)}
    lines = ["## Sweep config", "", _doc(SweepConfig), "", _HEADER]
    lines += [_row(n, i) for n, i in fields.items() if n not in sections]
    for name, section in sections.items():
        lines += ["", f"### `{name}`", "", _doc(section), "", _HEADER]
        lines += [_row(f"{name}.{n}", i) for n, i in _fields(section).items()]
    return lines


def method_tables() -> list[str]:
    """The settings every method shares, then per method the fields it adds or whose default it changes."""
    from sentsweep.trainables.registry import METHODS
    from sentsweep.trainables.trial_config import TrialConfig

    shared = _fields(TrialConfig)
    lines = ["## Method configs", "", "### Settings every method shares", "", _doc(TrialConfig), "", _HEADER]
    lines += [_row(n, i) for n, i in shared.items()]
    for method in METHODS.values():
        cls = method.config_cls
        own = {n: i for n, i in _fields(cls).items()
               if n not in shared or _default(i) != _default(shared[n]) or i.annotation != shared[n].annotation}
        lines += ["", f"### `{method.name}` ({cls.__name__})", "", _doc(cls), "",
                  "Its own fields, and the shared ones it sets otherwise:", "", _HEADER]
        lines += [_row(n, i, shared.get(n)) for n, i in own.items()]
    return lines


def space_tables() -> list[str]:
    """The search-space syntax, then the shipped spaces with their entries."""
    from sentsweep.search_spaces import SEARCH_SPACES

    syntax = (resources.files("sentsweep.search_spaces") / "syntax.md").read_text(encoding="utf-8").strip()
    lines = [syntax, "", "### Shipped spaces", "", "| name | method | what it samples |", "|---|---|---|"]
    for name, space in SEARCH_SPACES.items():
        entries = "<br>".join(f"`{_cell(line)}`" for line in space.describe())
        lines.append(f"| `{name}` | {space.method} | {_cell(space.description)}<br>{entries} |")
    return lines


def reference() -> str:
    """The whole reference, as ``docs/configuration.md`` holds it."""
    return "\n".join([_INTRO, *sweep_tables(), "", *method_tables(), "", *space_tables()]) + "\n"
