"""Errors a user can cause: each names the field, file or line at fault.

The CLI prints these without a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


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
