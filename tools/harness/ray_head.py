"""A local Ray head (``ray start --head --block``) with its dashboard and Jobs API on free loopback ports, in a
process group of its own; with ``token``, started as Ray 2.60 documents token auth (``RAY_AUTH_MODE=token``
and the token in ``RAY_AUTH_TOKEN`` of the head's environment). Worker nodes that join it:
:mod:`tools.harness.ray_cluster`.

Without a token a head runs in Ray's single-machine mode only (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: every
address on 127.0.0.1). In cluster mode Ray's GCS and raylet listen on every interface and the dashboard agent on
the host's address whatever ``--node-ip-address`` says, and its job API runs any command it is sent: such a head
is refused without a token (:func:`start_head`). The token lives in the environments of the processes started
here and of this process while it asks the GCS (:func:`token_auth`); it is never written or printed."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sentsweep.credentials import RAY_AUTH_MODE_ENV, RAY_TOKEN_ENV, RAY_TOKEN_PATH_ENV
from sentsweep.platform.driver.ray_session import CLUSTER_MODE_ENV
from tools.harness.processes import LOOPBACK, end_group, free_port, wait_for_port

PORT_OPTIONS = ("port", "dashboard-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
                "runtime-env-agent-port", "metrics-export-port", "ray-client-server-port", "node-manager-port",
                "object-manager-port")
"""Every port ``ray start --head`` opens, each given a free one (no clash with other heads on this machine)."""


@dataclass
class RayHead:
    """A running head: its ``ray start`` process (the group leader), dashboard address and temp dir."""

    process: subprocess.Popen
    address: str
    temp_dir: Path
    log: Path
    token: str | None = field(default=None, repr=False)
    gcs_port: int | None = None

    @property
    def gcs_address(self) -> str:
        """What ``ray start --address`` and ``ray.init(address=...)`` take (``127.0.0.1:PORT``)."""
        return f"{LOOPBACK}:{self.gcs_port}"

    def stop(self) -> None:
        """End the head's process group (only processes this harness started) and remove its temp dir."""
        end_group(self.process)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def head_command(temp_dir: Path, ports: dict[str, int], num_cpus: int, num_gpus: int | None = None) -> list[str]:
    command = [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block",
               "--node-ip-address", LOOPBACK, "--dashboard-host", LOOPBACK, "--include-dashboard", "true",
               "--num-cpus", str(num_cpus), "--temp-dir", str(temp_dir), "--disable-usage-stats"]
    if num_gpus is not None:
        command += ["--num-gpus", str(num_gpus)]
    for name, port in ports.items():
        command += [f"--{name}", str(port)]
    return command


def auth_env(token: str | None) -> dict[str, str]:
    """Ray's auth variables for a cluster with ``token`` (``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``), or for one
    without (``RAY_AUTH_MODE=disabled``): what its nodes and the drivers and clients that connect to it hold."""
    return {RAY_AUTH_MODE_ENV: "disabled"} if token is None else {RAY_AUTH_MODE_ENV: "token", RAY_TOKEN_ENV: token}


def head_env(token: str | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without Ray's address and auth variables, then the head's own, then ``extra`` (what a
    cluster's nodes hold in their environment: credentials, PYTHONPATH), then the auth of ``token``
    (:func:`auth_env`): neither this environment (the Makefile's ``RAY_AUTH_MODE=disabled``) nor ``extra``
    changes it."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("RAY_ADDRESS", "RAY_AUTH_", "RAY_API_SERVER_ADDRESS"))}
    env.update(RAY_DEDUP_LOGS="0", PYTHONUNBUFFERED="1",
               # Single-machine mode: Ray keeps every address on 127.0.0.1 instead of this host's interface.
               RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               # A job's `python` is this environment's, where sentsweep and its requirements are installed.
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    env.update({key: value for key, value in (extra or {}).items() if not key.startswith("RAY_AUTH_")})
    env.update(auth_env(token))
    return env


@contextlib.contextmanager
def token_auth(token: str | None) -> Iterator[None]:
    """This process's Ray clients (``GcsClient``) send ``token`` inside (nothing changes without one); its Ray auth
    variables are restored after (:func:`sentsweep.platform.driver.ray_session.ray_auth`: nothing written)."""
    if token is None:
        yield
        return
    from sentsweep.platform.driver.ray_session import ray_auth

    with ray_auth({**auth_env(token), RAY_TOKEN_PATH_ENV: None}):
        yield


@contextlib.contextmanager
def ray_head(*, num_cpus: int = 2, token: str | None = None, timeout: float = 120.0) -> Iterator[RayHead]:
    """A head listening on its dashboard port (its job agent may need a few seconds more), stopped on exit,
    also when starting it fails."""
    head = start_head(num_cpus=num_cpus, token=token, timeout=timeout)
    try:
        yield head
    finally:
        head.stop()


def start_head(*, num_cpus: int = 2, num_gpus: int | None = None, token: str | None = None,
               env: Mapping[str, str] | None = None, args: Sequence[str] = (), timeout: float = 120.0) -> RayHead:
    """A head listening on its dashboard port; the caller stops it (:meth:`RayHead.stop`). Stopped here when
    it does not start. In Ray's cluster mode (``env`` with ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1``) only with a
    ``token``: it listens on every interface. ``args`` go to ``ray start`` after the harness's own."""
    mode = head_env(None, env).get(CLUSTER_MODE_ENV)
    if token is None and mode != "0":
        raise ValueError(f"a Ray head in cluster mode ({CLUSTER_MODE_ENV}={mode}) listens on every interface: "
                         "start it with a token")
    temp_dir = Path(tempfile.mkdtemp(prefix="ssr-", dir="/tmp"))  # short: Ray's unix sockets live under it
    ports = {name: free_port() for name in PORT_OPTIONS}
    log = temp_dir / "head.log"
    with log.open("w") as sink:
        process = subprocess.Popen([*head_command(temp_dir, ports, num_cpus, num_gpus), *args], stdout=sink,
                                   stderr=subprocess.STDOUT, env=head_env(token, env), start_new_session=True)
    head = RayHead(process, f"http://{LOOPBACK}:{ports['dashboard-port']}", temp_dir, log, token, ports["port"])
    try:
        wait_for_port(ports["dashboard-port"], process, log, timeout=timeout, what="the Ray head")
    except BaseException:
        head.stop()
        raise
    return head
