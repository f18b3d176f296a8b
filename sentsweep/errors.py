"""Errors a user can cause: each names the field, file or line at fault.

The CLI prints these without a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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
            where.append(f"field '{field}'")
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


def validation_message(exc: ValidationError) -> tuple[str, str | None]:
    """A pydantic error in one line, and the dotted field it names (None for the whole object): the first problem,
    the count of the others; a check that raised a :class:`ConfigError` keeps its own message and field."""
    errors = exc.errors()
    if not errors:
        return str(exc), None
    first = errors[0]
    more = len(errors) - 1
    extra = f" ({more} more error{'s' * (more > 1)})" if more else ""
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ConfigError):
        return cause.message + extra, cause.field
    message = "unknown field" if first["type"] == "extra_forbidden" else first["msg"].removeprefix("Value error, ")
    return message + extra, ".".join(str(part) for part in first["loc"]) or None


def config_error(exc: ValidationError, file: str | Path | None = None,
                 field_of: Callable[[str | None], str | None] = lambda name: name) -> ConfigError:
    """:func:`validation_message` as a :class:`ConfigError` naming ``file`` and the field (``field_of`` maps a
    model's field to where the user wrote it)."""
    message, field = validation_message(exc)
    return ConfigError(message, field=field_of(field), file=file)
