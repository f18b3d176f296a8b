"""Errors a user can cause: each names the field, file or line at fault.

The CLI prints these without a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class SentsweepError(Exception):
    """Base class for errors caused by user input (config, data files, arguments)."""


class ConfigError(SentsweepError, ValueError):
    """A configuration value is invalid; the message names the field (and the file when known).

    Also a ``ValueError``, so callers that validate values generically catch it."""

    def __init__(self, message: str, *, field: str | None = None, file: str | Path | None = None) -> None:
        self.message = message
        self.field = field
        self.file = str(file) if file is not None else None
        where = []
        if self.file:
            where.append(self.file)
        if field:
            where.append(f"option '{field}'" if field.startswith("--") else f"field '{field}'")
        prefix = ": ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class DataError(SentsweepError):
    """A data file is missing or malformed; the message names the file and, when known, the line."""

    def __init__(self, message: str, *, file: str | Path | None = None, line: int | None = None) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        where = self.file or ""
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)


class StorageError(SentsweepError):
    """The storage of a sweep folder did not answer (an S3 outage or 5xx, a full or failing disk) after a few
    tries: the message names the file. Not the user's fault, and passing: a sweep that ends on it is ``crashed``
    (resumable), and nothing was written in place of what could not be read."""

    def __init__(self, message: str, *, file: str | Path) -> None:
        self.message = message
        self.file = str(file)
        super().__init__(f"{self.file}: {message}")


def _near_field(model: Any, loc: tuple[Any, ...]) -> str:
    """``; did you mean 'NAME'?`` for an unknown field at ``loc`` of pydantic ``model`` (nested sections followed)
    when a field's name is close to it, else ``""``."""
    import typing

    from pydantic import BaseModel

    for part in loc[:-1]:  # down to the section that holds the unknown field
        field = getattr(model, "model_fields", {}).get(str(part))
        if field is None:
            return ""
        model = next((t for t in (field.annotation, *typing.get_args(field.annotation))
                      if isinstance(t, type) and issubclass(t, BaseModel)), None)
    names = [f.alias or name for name, f in getattr(model, "model_fields", {}).items()]
    near = near_name(str(loc[-1]) if loc else "", names)
    return f"; did you mean '{near}'?" if near else ""


def near_name(typo: str, names: Iterable[str]) -> str | None:
    """The name of ``names`` a misspelled ``typo`` most likely meant: the shortest that one of them begins, else the
    closest by :func:`difflib.get_close_matches`; None when none is close."""
    import difflib

    names = list(names)
    prefixed = sorted((n for n in names if typo and (n.startswith(typo) or typo.startswith(n))), key=len)
    near = prefixed[:1] or difflib.get_close_matches(typo, names, n=1)
    return near[0] if near else None


def validation_message(exc: ValidationError, model: Any = None) -> tuple[str, str | None]:
    """A pydantic error in one line, and the dotted field it names (None for the whole object): the first problem,
    the count of the others; a check that raised a :class:`ConfigError` keeps its own message and field. An unknown
    field of ``model`` (the pydantic class validated) names the known field closest to it."""
    errors = exc.errors()
    if not errors:
        return str(exc), None
    first = errors[0]
    more = len(errors) - 1
    extra = f" ({more} more error{'s' * (more > 1)})" if more else ""
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ConfigError):
        return cause.message + extra, cause.field
    if first["type"] == "extra_forbidden":
        message = "unknown field" + (_near_field(model, tuple(first["loc"])) if model is not None else "")
    else:
        message = first["msg"].removeprefix("Value error, ")
    return message + extra, ".".join(str(part) for part in first["loc"]) or None


def config_error(exc: ValidationError, file: str | Path | None = None,
                 field_of: Callable[[str | None], str | None] = lambda name: name, model: Any = None) -> ConfigError:
    """:func:`validation_message` as a :class:`ConfigError` naming ``file`` and the field (``field_of`` maps a
    model's field to where the user wrote it; ``model``, the class validated, lets an unknown field name a near one)."""
    message, field = validation_message(exc, model)
    return ConfigError(message, field=field_of(field), file=file)
