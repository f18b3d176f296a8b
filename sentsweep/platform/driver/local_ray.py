"""A local Ray that listens on the loopback interface only.

On Linux ``ray.init(address="local")`` announces the machine's routable address and its processes listen there
(the GCS, the raylet, the runtime-env agent) and on every interface (the dashboard agent, the dashboard's
process), without authentication when ``RAY_AUTH_MODE=disabled`` (``make demo``). On a shared login or GPU node
anybody who can reach that address could run tasks as the sweep's owner, with the owner's environment (tracking and
bucket credentials). ``_node_ip_address="127.0.0.1"`` does not change this: the bind addresses come from Ray's
single-machine mode (read from ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` when Ray is imported; in the driver's Ray,
switched by :func:`sentsweep._compat.ray.set_single_machine`), which keeps every address on 127.0.0.1. The test
``tests/platform/test_local_ray.py`` lists the listening sockets of a local sweep's Ray and fails when this stops
holding (a Ray upgrade that renames it).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Mapping

from sentsweep._compat.ray import reload_auth_settings, set_single_machine

#: Ray's switch between single-machine mode (``"0"``: loopback) and cluster mode.
CLUSTER_MODE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: Ray's token authentication: its mode, the token itself and a file holding it.
AUTH_MODE_ENV, TOKEN_ENV, TOKEN_PATH_ENV = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Ray started inside keeps every address on 127.0.0.1; the driver's setting is restored after.

    Both places matter: the environment for the processes Ray starts (they read it when they import Ray), and the
    constant of the driver's already imported Ray (it chooses the node address it hands them)."""
    before_env = os.environ.get(CLUSTER_MODE_ENV)
    os.environ[CLUSTER_MODE_ENV] = "0"
    before_single = set_single_machine(True)
    try:
        yield
    finally:
        set_single_machine(before_single)
        if before_env is None:
            os.environ.pop(CLUSTER_MODE_ENV, None)
        else:
            os.environ[CLUSTER_MODE_ENV] = before_env


@contextlib.contextmanager
def session_token() -> Iterator[None]:
    """Token authentication for a new local Ray, with a token of this session only.

    Ray 2.60 turns token authentication on for a new local cluster, and writes the token to ``~/.ray/auth_token``
    under the usual umask: readable by the other users of a shared host, who can reach the loopback ports. Here the
    token is drawn for the session and lives in this process's environment (``RAY_AUTH_TOKEN``), which Ray's
    processes inherit and which only this user can read; nothing is written. ``RAY_AUTH_MODE=disabled`` (the
    tests) and a token the user set themselves are left as they are."""
    if os.environ.get(AUTH_MODE_ENV, "").lower() == "disabled" or os.environ.get(TOKEN_ENV) \
            or os.environ.get(TOKEN_PATH_ENV):
        yield
        return
    with ray_auth({AUTH_MODE_ENV: "token", TOKEN_ENV: secrets.token_hex(32)}):
        yield


@contextlib.contextmanager
def ray_auth(values: Mapping[str, str | None]) -> Iterator[None]:
    """This process's Ray auth variables set to ``values`` inside (None: unset), then restored; Ray's config and its
    cached token read again at both ends (the driver's Ray read them when imported, as Ray's own switch does).
    Nothing is written: the token lives in this process's environment, which the processes Ray starts inherit."""
    saved = {name: os.environ.get(name) for name in values}

    def apply(settings: Mapping[str, str | None]) -> None:
        for name, value in settings.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reload_auth_settings()

    apply(values)
    try:
        yield
    finally:
        apply(saved)
