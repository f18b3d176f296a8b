"""What a job's environment gets from this one, and what is shown of it: forwarded variables, credentials
split out of a tracking URI, masks and redaction (values are never printed or logged)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from sentsweep.errors import ConfigError

FORWARDED_ENV: tuple[str, ...] = (
    "MLFLOW_TRACKING_USERNAME",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_S3_ENDPOINT_URL",
    "MLFLOW_S3_IGNORE_TLS",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "HF_TOKEN",
)
"""Variables copied from the submitting environment into the job's when they are set (values never shown)."""

MASK = "***"


def forwarded_env(environ: Mapping[str, str], extra: Sequence[str] = (), *,
                  forward_defaults: bool = True) -> dict[str, str]:
    """The variables a job gets from ``environ``: :data:`FORWARDED_ENV` that are set (and not empty), then
    each ``--env`` entry, ``NAME`` (copied, an error when unset) or ``NAME=VALUE``."""
    selected = {name: environ[name] for name in FORWARDED_ENV if forward_defaults and environ.get(name)}
    for entry in extra:
        name, sep, value = entry.partition("=")
        name = name.strip()
        if not name or not name.replace("_", "").isalnum() or name[0].isdigit():
            raise ConfigError(f"'{name or entry}' is not a variable name (use NAME or NAME=VALUE)", field="--env")
        if sep:
            selected[name] = value
        elif environ.get(name):
            selected[name] = environ[name]
        else:
            raise ConfigError(f"{name} is not set in this environment (use NAME=VALUE to give a value)",
                              field="--env")
    return selected


def masked(env: Mapping[str, str]) -> str:
    """``NAME=***`` for each variable, sorted: what a summary may show of a job's environment."""
    return ", ".join(f"{name}={MASK}" for name in sorted(env)) or "(none)"


def mask_uri(uri: str) -> str:
    """``uri`` with any password in its user-info part masked (``http://user:***@host``)."""
    if "://" not in uri:
        return uri
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:{MASK}@{host}"))


def split_credentials(uri: str) -> tuple[str, dict[str, str]]:
    """``http://user:pass@host`` as ``http://host`` plus ``MLFLOW_TRACKING_USERNAME``/``PASSWORD``, so a
    password never lands in the shipped config or in what the sweep prints about its tracking URI (a
    database URI such as ``postgresql://user:pass@db/mlflow`` keeps its credentials: they are its own)."""
    if not uri.startswith(("http://", "https://")):
        return uri, {}
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri, {}
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    credentials = {"MLFLOW_TRACKING_USERNAME": unquote(parts.username or "")}
    if parts.password is not None:
        credentials["MLFLOW_TRACKING_PASSWORD"] = unquote(parts.password)
    return urlunsplit(parts._replace(netloc=host)), {k: v for k, v in credentials.items() if v}


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value (4+ characters) replaced by :data:`MASK`."""
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
