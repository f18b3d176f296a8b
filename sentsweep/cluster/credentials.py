"""What a job's requests and environment carry from this one: the Ray token, the forwarded variables, and what is
shown of them (names and masks, never values). The token travels as ``Authorization: Bearer ...`` on every Jobs API
request, never in a job's runtime environment: the cluster's pods have their own (KubeRay injects it)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from sentsweep.credentials import (
    MASK,
    RAY_AUTH_MODE_ENV,
    RAY_TOKEN_ENV,
    RAY_TOKEN_PATH_ENV,
    UriKind,
    mask_uri,
    split_uri,
)
from sentsweep.errors import ConfigError, SentsweepError

DEFAULT_TOKEN_FILE = Path("~/.ray/auth_token")
#: Variables that carry the cluster's token: never forwarded into a job.
RAY_AUTH_ENV = (RAY_TOKEN_ENV, RAY_TOKEN_PATH_ENV)
WHERE = f"--token-file PATH, ${RAY_TOKEN_ENV} or ${RAY_TOKEN_PATH_ENV}"

#: Credentials and endpoints a submitting environment commonly holds. None is forwarded into a job unless
#: ``--forward-env NAME`` names it (the cluster's pods have their own, from Kubernetes Secrets); the Ray token never
#: is. Their values are redacted from whatever ``sentsweep`` shows.
CREDENTIAL_ENV: tuple[str, ...] = (
    "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_INSECURE_TLS",
    "MLFLOW_S3_ENDPOINT_URL", "MLFLOW_S3_IGNORE_TLS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "DATABRICKS_HOST", "DATABRICKS_TOKEN", *RAY_AUTH_ENV)


class AuthenticationRequired(SentsweepError):
    """No token, an unreadable one, or one the cluster refused (one line, starting "authentication required")."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"authentication required: {reason}")


@dataclass(frozen=True)
class RayToken:
    """A token and where it came from (the source may be shown; the value never)."""

    value: str = field(repr=False)
    source: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.value}"}


def _read(path: Path, source: str) -> RayToken:
    try:
        value = path.expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise AuthenticationRequired(f"cannot read the Ray token file {path} ({source}): "
                                     f"{exc.strerror or type(exc).__name__}") from None
    if not value:
        raise AuthenticationRequired(f"the Ray token file {path} ({source}) is empty")
    return RayToken(value, f"{source} {path}")


def find_token(token_file: str | Path | None, environ: Mapping[str, str]) -> RayToken | None:
    """The token to send, first found where Ray's Jobs SDK looks: ``--token-file``; ``$RAY_AUTH_TOKEN``; the file
    ``$RAY_AUTH_TOKEN_PATH`` names (unreadable or empty is an error, as in Ray); ``~/.ray/auth_token`` only with
    ``RAY_AUTH_MODE=token`` (a local cluster's token is not sent elsewhere unasked). None when there is none."""
    if token_file:
        return _read(Path(token_file), "--token-file")
    if value := environ.get(RAY_TOKEN_ENV, "").strip():
        return RayToken(value, f"${RAY_TOKEN_ENV}")
    if path := environ.get(RAY_TOKEN_PATH_ENV, "").strip():
        return _read(Path(path), f"${RAY_TOKEN_PATH_ENV}")
    if environ.get(RAY_AUTH_MODE_ENV, "").strip().lower() == "token" and DEFAULT_TOKEN_FILE.expanduser().is_file():
        return _read(DEFAULT_TOKEN_FILE, "the default")
    return None


def plaintext_token_warning(address: str, token: RayToken | None) -> str | None:
    """The warning that ``token`` would cross a network unencrypted: plain ``http://`` to a host that is neither this
    machine (a port-forward) nor a Service name of the cluster the command runs in. None when it would not."""
    parsed = urlparse(address if "://" in address else f"http://{address}")
    host = (parsed.hostname or "").lower().rstrip(".")
    if token is None or parsed.scheme != "http":
        return None
    try:
        here = ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: localhost, or a Service of the cluster (bare, or under .svc)
        here = host == "localhost" or "." not in host or host.endswith((".svc", ".svc.cluster.local"))
    if here:
        return None
    return (f"the Ray token goes unencrypted to {parsed.scheme}://{parsed.netloc}: use https:// in front of the "
            "dashboard, or kubectl port-forward and --address http://127.0.0.1:8265 (docs/security.md)")


def auth_failure(status: int, address: str, token: RayToken | None) -> AuthenticationRequired:
    """What an HTTP 401 or 403 from the dashboard at ``address`` means: without a token, that one is needed; with
    one, that it was refused (Ray answers 403 to a wrong token; a proxy in front of it may answer 401)."""
    if token is None:
        return AuthenticationRequired(f"the Ray cluster at {address} requires a token; give it with {WHERE} "
                                      "(on Kubernetes: the Secret ray-auth, key auth_token)")
    return AuthenticationRequired(f"the Ray cluster at {address} refused the token from {token.source} "
                                  "(a token of another cluster, or rotated?)")


def refuse_credentials(uri: str | None, kind: UriKind, field: str, file: str | None = None) -> None:
    """A :class:`ConfigError` naming ``field`` (never the value) when ``uri`` carries a password or a login that
    ``split_uri`` would move (a database user name stays): every Jobs API reader sees a job's config and entrypoint."""
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
    """The variables a job gets: each ``--forward-env NAME`` from ``environ``, then each ``--env NAME=VALUE``."""
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
    """Values of the :data:`CREDENTIAL_ENV` set in ``environ``: what is redacted from shown text."""
    return [environ[name] for name in CREDENTIAL_ENV if environ.get(name)]


def masked(env: Mapping[str, str]) -> str:
    """``NAME=***`` for each variable, sorted: what a summary may show of a job's environment."""
    return ", ".join(f"{name}={MASK}" for name in sorted(env)) or "(none)"
