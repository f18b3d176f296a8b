"""Reading YAML config files and ``--set key=value`` overrides, with errors naming file and line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from sentsweep.errors import ConfigError


def read_yaml(path: str | Path) -> dict[str, Any]:
    """The mapping at the top of a YAML file; a syntax error names the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("config file not found", file=path)
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML{where}: {problem}", file=path) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"the top level must be a mapping, got {type(loaded).__name__}", file=path)
    return loaded


def apply_overrides(config: dict[str, Any], assignments: Sequence[str]) -> dict[str, Any]:
    """A copy of ``config`` with each ``dotted.key=value`` applied (values parsed as YAML scalars)."""
    result = dict(config)
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override '{assignment}' is not of the form key=value", field="--set")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            value = text
        value = number_or_same(value)
        node = result
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.get(part)
            node[part] = dict(child) if isinstance(child, dict) else {}
            node = node[part]
        node[parts[-1]] = value
    return result


@contextlib.contextmanager
def blaming_overrides(assignments: Sequence[str]) -> Iterator[None]:
    """A :class:`ConfigError` about a field that a ``--set`` of ``assignments`` gave names ``--set``, not the file."""
    try:
        yield
    except ConfigError as exc:
        keys = {a.partition("=")[0].strip() for a in assignments}
        if exc.field is None or not any(exc.field == k or exc.field.startswith((f"{k}.", f"{k}[")) for k in keys):
            raise
        raise ConfigError(exc.message, field=exc.field, file="--set") from None


def number_or_same(value: Any) -> Any:
    """Text that reads as an int or a float as that number, anything else as it is (YAML 1.1 reads ``3e-5`` as a
    string, MLflow keeps params as text)."""
    if not isinstance(value, str):
        return value
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value
