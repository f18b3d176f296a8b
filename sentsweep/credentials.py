"""Credentials kept out of everything a sweep writes or shows.

A URI may carry credentials in its user-info: ``http://user:pass@mlflow:5000`` (a tracking server),
``postgresql://user:pass@db/mlflow`` (a tracking database), ``s3://KEY:SECRET@bucket/prefix`` or
``http://KEY:SECRET@minio:9000`` (storage). :class:`CredentialSplit` takes them off and puts each into the
standard environment variable its client reads by itself, so that the rest of the sweep (params, tags,
artifacts, the sweep folder's manifest, Tune's state and trial results) only ever holds the clean URI:

=====================  ==================================================  ==============================
URI                    variables                                           read by
=====================  ==================================================  ==============================
``http(s)://`` server  ``MLFLOW_TRACKING_USERNAME``, ``..._PASSWORD``      MLflow's REST client
``postgresql://``      ``PGPASSWORD`` (the user name stays in the URI)     libpq (psycopg2)
``s3://``, endpoint    ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``    pyarrow, boto3
=====================  ==================================================  ==============================

:func:`mask_text` hides what is left from what is shown (passwords in any URI's user-info, and the values of
:data:`SECRET_ENV`); :func:`masked_output` applies it to ``sys.stdout``, ``sys.stderr`` and every log record
of the process, as a last resort (the CLI runs every command inside it).

This module imports nothing beyond the standard library (the CLI masks every command without loading MLflow).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from types import TracebackType
from typing import Any, Literal, TextIO
from urllib.parse import unquote, urlsplit

from sentsweep.errors import ConfigError

MASK = "***"

TRACKING_USERNAME, TRACKING_PASSWORD = "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"
ACCESS_KEY, SECRET_KEY = "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"
DATABASE_PASSWORD = "PGPASSWORD"
#: Ray's token authentication: its mode, the token itself and a file holding it.
RAY_AUTH_MODE_ENV, RAY_TOKEN_ENV, RAY_TOKEN_PATH_ENV = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"

SECRET_ENV: tuple[str, ...] = (TRACKING_PASSWORD, "MLFLOW_TRACKING_TOKEN", ACCESS_KEY, SECRET_KEY,
                               "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", DATABASE_PASSWORD, RAY_TOKEN_ENV, "HF_TOKEN",
                               "HUGGING_FACE_HUB_TOKEN", "DATABRICKS_TOKEN")
"""Variables whose values are never shown (:func:`secret_values`): the URIs' credentials above (and botocore's
older name of the session token), the Ray cluster's token (``sentsweep submit`` and ``jobs`` send it;
:mod:`sentsweep.cluster.credentials`), the Hugging Face Hub's token under either name and the token MLflow sends to a
``databricks`` tracking URI."""

UriKind = Literal["tracking", "storage"]

#: (user variable, password variable) by kind and scheme; a user variable of None keeps the user in the URI.
_VARIABLES: dict[UriKind, dict[str, tuple[str | None, str]]] = {
    "tracking": {"http": (TRACKING_USERNAME, TRACKING_PASSWORD), "https": (TRACKING_USERNAME, TRACKING_PASSWORD),
                 "postgresql": (None, DATABASE_PASSWORD)},
    "storage": {"s3": (ACCESS_KEY, SECRET_KEY), "http": (ACCESS_KEY, SECRET_KEY), "https": (ACCESS_KEY, SECRET_KEY)},
}

#: ``scheme://user:password@``: a user without ``/``, ``:``, ``@`` (or ``[``, ``]``: an IPv6 host), then the
#: password up to the last ``@`` of its first ``/``-separated piece that holds one (as urllib reads it when the
#: password has no ``/``). A password may hold an unencoded ``/`` (AWS secret keys often do), which urllib
#: reads as the start of the path; ``host:PORT/path@x`` (digits, then ``/``) stays a port and a path.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\[\]]*)"
                       r":(?P<password>(?!\d*/)(?:[^\s/]*/)*?[^\s/]*)@")
#: ``http(s)://user@`` or ``s3://user@`` with no password: such a bare user name is often a token
#: (``https://TOKEN@host``). A database's or git's user name (``git+ssh://git@host``) is no secret.
_BARE_USER = re.compile(r"(?<![A-Za-z0-9+.\-])(?P<head>(?:https?|s3)://)[^\s:/@\[\]]+@")
_MIN_SECRET = 4  # shorter values (a region, "true") would mask ordinary words


def split_uri(uri: str, kind: UriKind, field: str | None = None) -> tuple[str, dict[str, str]]:
    """``uri`` without its user-info, and the variables that user-info goes into (see the module's table).

    >>> split_uri("http://alice:p%40ss@mlflow:5000/x", "tracking")
    ('http://mlflow:5000/x', {'MLFLOW_TRACKING_USERNAME': 'alice', 'MLFLOW_TRACKING_PASSWORD': 'p@ss'})

    Refused (:class:`ConfigError` naming ``field``; the password is never part of the message):

    - a password in a URI of another scheme: no standard variable would carry it, and the URI would be written
      into the sweep's records;
    - a password holding an unencoded ``/`` (or ``?``, ``#``), as in ``s3://KEY:abc/def@bucket``: urllib ends
      the host there and reads the rest as a path, so the password cannot be told from the URI safely. It has
      to be percent-encoded (``/`` as ``%2F``), or given through the environment. (:func:`mask_uri` masks it
      either way.)"""
    if "://" not in uri:
        return uri, {}
    parts = urlsplit(uri)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        if _USERINFO.match(uri):  # a user-info urllib does not see: its password holds a '/', '?' or '#'
            raise ConfigError("its password holds a '/' (or '?', '#') that is not percent-encoded: "
                              "percent-encode the password ('/' as %2F), or give it through the environment",
                              field=field)
        return uri, {}
    user, colon, password = userinfo.partition(":")
    scheme = parts.scheme.split("+", 1)[0].lower()  # postgresql+psycopg2 -> postgresql
    variables = _VARIABLES[kind].get(scheme)
    if variables is None:
        if not colon:
            return uri, {}
        raise ConfigError(f"a password in a {parts.scheme}:// URI would be written into the sweep's records; "
                          f"give it through the environment and a URI without one ({mask_uri(uri)})", field=field)
    user_variable, password_variable = variables
    found = {user_variable: unquote(user)} if user_variable else {}
    if colon:
        found[password_variable] = unquote(password)
    if user_variable is None and user:
        host = f"{user}@{host}"  # a database user name is no secret; libpq takes the password alone
    clean = parts._replace(netloc=host).geturl()
    return clean, {name: value for name, value in found.items() if value}


class CredentialSplit:
    """Credentials taken off several URIs of one config: one value per variable, checked against the
    environment before they go into it.

    >>> split = CredentialSplit()
    >>> split.take("s3://AKIA1:SECRET1@bucket/x", "storage", "storage_path")
    's3://bucket/x'
    >>> split.export(env := {})
    >>> sorted(env)
    ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']
    """

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.fields: dict[str, str | None] = {}

    def take(self, uri: str | None, kind: UriKind, field: str) -> str | None:
        """``uri`` without its user-info (None stays None); a value differing from another URI's is an error."""
        if uri is None:
            return None
        clean, found = split_uri(uri, kind, field)
        for name, value in found.items():
            if self.values.get(name, value) != value:
                raise ConfigError(f"its user-info differs from the one in '{self.fields[name]}' ({name}); give the "
                                  "credentials once", field=field)
            self.values[name] = value
            self.fields.setdefault(name, field)
        return clean

    def export(self, environ: MutableMapping[str, str]) -> None:
        """Set the variables in ``environ``; one set there to another value is an error (nothing is set then)."""
        for name, value in self.values.items():
            if environ.get(name) not in (None, "", value):
                raise ConfigError(f"its user-info and ${name} differ; give the credentials in one place (the "
                                  "environment variable, with a URI without user-info)", field=self.fields[name])
        environ.update(self.values)


def mask_uri(uri: str) -> str:
    """``uri`` with the password of its user-info masked (``http://user:***@host``), and a user name without a
    password in an ``http(s)://`` or ``s3://`` URI (``https://***@host``)."""
    return _BARE_USER.sub(lambda m: f"{m['head']}{MASK}@", _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", uri))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value (4+ characters) replaced by :data:`MASK`."""
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with passwords in URIs (:func:`mask_uri`) and the given secret values (:func:`redact`) masked."""
    return redact(mask_uri(text), secrets)


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values of the :data:`SECRET_ENV` set in ``environ``."""
    return [environ[name] for name in SECRET_ENV if environ.get(name)]


def refused_credentials(exc: BaseException, uri: str) -> ConfigError | None:
    """The one-line error for a tracking server's 401 or 403 (an ``MlflowException``), None for others."""
    status_of = getattr(exc, "get_http_status_code", None)
    return refused_status(status_of() if callable(status_of) else None, uri)


def refused_status(status: int | None, uri: str) -> ConfigError | None:
    """The one-line error for a tracking server's HTTP ``status`` 401 or 403, None for others."""
    if status == 401 and os.environ.get(TRACKING_USERNAME):
        return ConfigError(f"the tracking server {mask_uri(uri)} refused the login in ${TRACKING_USERNAME} (HTTP "
                           f"401): check it and ${TRACKING_PASSWORD}")
    if status == 401:
        return ConfigError(f"the tracking server {mask_uri(uri)} asks for a login (HTTP 401): set "
                           f"{TRACKING_USERNAME} and {TRACKING_PASSWORD} in the environment")
    if status == 403:
        return ConfigError(f"the tracking server {mask_uri(uri)} refused the login in ${TRACKING_USERNAME} "
                           "(HTTP 403): it lacks permission on this sweep's experiment")
    return None


@contextlib.contextmanager
def explain_refused_credentials(uri: str) -> Iterator[None]:
    """Turn a tracking server's 401/403 inside the block into :func:`refused_credentials`' one line."""
    try:
        yield
    except Exception as exc:
        error = refused_credentials(exc, uri)
        if error is None:
            raise
        raise error from None


class MaskingStream:
    """A text stream that masks what is written (:func:`mask_text`, secrets read at each write) before passing
    it on; everything else (``fileno``, ``isatty``, ``encoding``, ...) is the wrapped stream's."""

    def __init__(self, stream: TextIO, secrets: Callable[[], list[str]]) -> None:
        self._stream = stream
        self._secrets = secrets

    def write(self, text: str) -> int:
        self._stream.write(mask_text(text, self._secrets()))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def masked_output(environ: Mapping[str, str] | None = None) -> Iterator[None]:
    """Mask secrets in everything this process prints or logs inside the block: ``sys.stdout`` and
    ``sys.stderr`` are wrapped in :class:`MaskingStream`, and every log record's message is masked when it is
    made (log handlers may hold a stream or a file of their own). Secrets are the values of
    :data:`SECRET_ENV` in ``environ`` (default: this process's environment) at the time of writing, plus any
    password in a URI. An exception leaving the block keeps a masking ``sys.excepthook`` behind, for the
    traceback the interpreter prints. A secret written in two pieces by two writes is not caught: a last
    resort only."""
    env = os.environ if environ is None else environ

    def secrets() -> list[str]:
        return secret_values(env)

    previous_factory = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous_factory(*args, **kwargs)
        with contextlib.suppress(Exception):  # a bad format string stays the logging module's to report
            message = record.getMessage()
            masked = mask_text(message, secrets())
            if masked != message:
                record.msg, record.args = masked, ()
        return record

    previous_hook = sys.excepthook

    def masked_hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        sys.stderr.write(mask_text("".join(traceback.format_exception(kind, value, tb)), secrets()))

    streams = {"stdout": sys.stdout, "stderr": sys.stderr}
    wrapped = {name: MaskingStream(stream, secrets) for name, stream in streams.items()}
    for name, stream in wrapped.items():
        setattr(sys, name, stream)
    logging.setLogRecordFactory(masked_record)
    sys.excepthook = masked_hook
    try:
        yield
    except BaseException:
        raise  # masked_hook stays: it prints the traceback should the exception end the process
    else:
        sys.excepthook = previous_hook
    finally:
        logging.setLogRecordFactory(previous_factory)
        for name, stream in wrapped.items():
            if getattr(sys, name) is stream:  # unless someone replaced it meanwhile
                setattr(sys, name, streams[name])
