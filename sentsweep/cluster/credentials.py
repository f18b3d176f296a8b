"""What a job's environment gets from this one, and what is shown of it: forwarded variables and masks (values
are never printed or logged). Splitting credentials off a URI, masking URIs and redacting text are
:mod:`sentsweep.credentials`' (the sweep driver does the same), re-exported here for the job's side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sentsweep.cluster.auth import RAY_AUTH_ENV
from sentsweep.credentials import MASK, UriKind, mask_uri, redact, split_credentials, split_uri
from sentsweep.errors import ConfigError

__all__ = ["CREDENTIAL_ENV", "MASK", "forwarded_env", "held_back", "local_secrets", "mask_uri", "masked", "redact",
           "refuse_credentials", "split_credentials"]

CREDENTIAL_ENV: tuple[str, ...] = (
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
    *RAY_AUTH_ENV,
)
"""Credentials and endpoints a submitting environment commonly holds. None is forwarded into a job unless
``--forward-env NAME`` names it (the cluster's pods have their own, from Kubernetes Secrets); the Ray token
never is. Their values are redacted from whatever ``sentsweep`` shows."""


def refuse_credentials(uri: str | None, kind: UriKind, field: str, file: str | None = None) -> None:
    """A :class:`ConfigError` naming ``field`` (never the value) when ``uri`` carries a credential in its
    user-info: a password (masked by :func:`mask_uri`, an unencoded ``/`` in it included) or a login that
    :func:`~sentsweep.credentials.split_uri` would move into a variable. A submitted job's config, entrypoint
    and runtime environment are readable by everyone who can read the cluster's Jobs API, so a submitted sweep
    takes its credentials from the pods (Kubernetes Secrets), or from a variable named by ``--forward-env``;
    nothing is moved into the job's environment unasked. A database user name (``postgresql://user@db/x``) is
    no credential and stays."""
    if uri is None:
        return
    try:
        found = mask_uri(uri) != uri or bool(split_uri(uri, kind, field)[1])
    except ConfigError:  # a password split_uri refuses to read: a credential all the same
        found = True
    if found:
        raise ConfigError("a submitted sweep carries no credential; the pods have their own (or name an env var "
                          "with --forward-env)", field=field, file=file)


def _check_name(name: str, flag: str) -> str:
    name = name.strip()
    if not name or not name.replace("_", "").isalnum() or name[0].isdigit():
        raise ConfigError(f"'{name}' is not a variable name", field=flag)
    if name in RAY_AUTH_ENV:
        raise ConfigError(f"{name} is never forwarded: the cluster's pods have their own Ray token", field=flag)
    return name


def forwarded_env(environ: Mapping[str, str], forward: Sequence[str] = (),
                  values: Sequence[str] = ()) -> dict[str, str]:
    """The variables a job gets: each ``--forward-env NAME`` copied from ``environ`` (an error when unset), then
    each ``--env NAME=VALUE``. Nothing else: a credential set here stays here unless named."""
    selected: dict[str, str] = {}
    for entry in forward:
        name = _check_name(entry, "--forward-env")
        if not environ.get(name):
            raise ConfigError(f"{name} is not set in this environment", field="--forward-env")
        selected[name] = environ[name]
    for entry in values:
        name, sep, value = entry.partition("=")
        if not sep:
            raise ConfigError(f"'{entry}' has no value: use NAME=VALUE (--forward-env NAME copies a variable)",
                              field="--env")
        selected[_check_name(name, "--env")] = value
    return selected


def held_back(environ: Mapping[str, str], forwarded: Mapping[str, str]) -> list[str]:
    """The :data:`CREDENTIAL_ENV` set in ``environ`` that the job does not get (names only)."""
    return [name for name in CREDENTIAL_ENV if environ.get(name) and name not in forwarded]


def local_secrets(environ: Mapping[str, str]) -> list[str]:
    """Values of the :data:`CREDENTIAL_ENV` set in ``environ``: what :func:`redact` removes from shown text."""
    return [environ[name] for name in CREDENTIAL_ENV if environ.get(name)]


def masked(env: Mapping[str, str]) -> str:
    """``NAME=***`` for each variable, sorted: what a summary may show of a job's environment."""
    return ", ".join(f"{name}={MASK}" for name in sorted(env)) or "(none)"
