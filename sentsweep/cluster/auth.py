"""The Ray token ``sentsweep submit`` and ``jobs`` send to a cluster with token auth (Ray 2.52+,
``RAY_AUTH_MODE=token``), found where Ray's own Jobs SDK looks, and never shown.

Sources, first found wins (Ray's order, with ``--token-file`` first):

1. ``--token-file PATH``;
2. ``$RAY_AUTH_TOKEN``;
3. the file named by ``$RAY_AUTH_TOKEN_PATH`` (unreadable or empty is an error, as in Ray, which aborts);
4. ``~/.ray/auth_token``, only when ``RAY_AUTH_MODE=token`` (Ray reads it only then; a local cluster's token
   is not sent to another address unasked).

The token travels as ``Authorization: Bearer ...`` on every Jobs API request (the header Ray's SDK sets). It is
never part of a job's runtime environment: the cluster's pods have their own (KubeRay injects it), and
:func:`~.credentials.forwarded_env` refuses to forward it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sentsweep.errors import SentsweepError

TOKEN_ENV = "RAY_AUTH_TOKEN"
TOKEN_PATH_ENV = "RAY_AUTH_TOKEN_PATH"
AUTH_MODE_ENV = "RAY_AUTH_MODE"
DEFAULT_TOKEN_FILE = Path("~/.ray/auth_token")
RAY_AUTH_ENV = (TOKEN_ENV, TOKEN_PATH_ENV)
"""Variables that carry the cluster's token: never forwarded into a job."""

WHERE = f"--token-file PATH, ${TOKEN_ENV} or ${TOKEN_PATH_ENV}"


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
    """The token to send, from the first source that has one (see the module); None when there is none."""
    if token_file:
        return _read(Path(token_file), "--token-file")
    value = environ.get(TOKEN_ENV, "").strip()
    if value:
        return RayToken(value, f"${TOKEN_ENV}")
    path = environ.get(TOKEN_PATH_ENV, "").strip()
    if path:
        return _read(Path(path), f"${TOKEN_PATH_ENV}")
    default = DEFAULT_TOKEN_FILE.expanduser()
    if environ.get(AUTH_MODE_ENV, "").strip().lower() == "token" and default.is_file():
        return _read(DEFAULT_TOKEN_FILE, "the default")
    return None


def auth_failure(status: int, address: str, token: RayToken | None) -> AuthenticationRequired:
    """What an HTTP 401 (no token) or 403 (a refused token) from the dashboard at ``address`` means."""
    if token is None or status == 401:
        return AuthenticationRequired(f"the Ray cluster at {address} requires a token; give it with {WHERE} "
                                      "(on Kubernetes: the Secret ray-auth, key auth_token)")
    return AuthenticationRequired(f"the Ray cluster at {address} refused the token from {token.source} "
                                  "(a token of another cluster, or rotated?)")
