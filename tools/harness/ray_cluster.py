"""A local multi-node Ray cluster: the head of :mod:`tools.harness.ray_head` (no GPUs, so trials that ask for one
go to the workers) and worker nodes, each a ``ray start --address HEAD --block`` process of its own (its own
process group, named ``--node-name``, ``--num-gpus`` logical GPUs: Ray schedules them and sets
``CUDA_VISIBLE_DEVICES``; torch finds no CUDA and the trials train on the CPU).

A node is lost the way a machine is: :meth:`RayNode.kill_raylet` SIGKILLs its raylet by PID (found among the
children of the node's ``ray start`` process), the rest of its group is ended after. The head notices within a
few seconds (:data:`FAST_FAILURE_DETECTION`).

The cluster runs in Ray's cluster mode, where the GCS and the raylets listen on every interface and each node's
dashboard agent on the host's address (``--node-ip-address 127.0.0.1`` does not change that), and the agent's job
API runs any command it is sent. So the cluster always has token auth: :func:`start_cluster` draws a token, every
node holds it (``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN``), and :meth:`LocalCluster.client_env` is what a driver
or a Jobs client of the cluster needs; whatever ``RAY_AUTH_MODE`` the caller has (the Makefile's ``disabled``).
The token is never written or printed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tools.harness.processes import LOOPBACK, ServiceError, end_group, free_port, log_tail
from tools.harness.ray_head import RayHead, auth_env, head_env, start_head, token_auth

WORKER_PORT_OPTIONS = ("node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
                       "dashboard-agent-grpc-port", "runtime-env-agent-port", "metrics-export-port")
"""Every port ``ray start --address`` opens that has a fixed default (two nodes on one machine would clash)."""

#: GCS health checks of the head every second, a node dead after 5 failed (Ray's defaults: ~30 s), so a lost
#: node's trials are rescheduled within seconds: a dead raylet refuses the check at once, while a live one on a
#: loaded machine has 10 s to answer.
FAST_FAILURE_DETECTION = {"RAY_health_check_period_ms": "1000", "RAY_health_check_timeout_ms": "10000",
                          "RAY_health_check_failure_threshold": "5"}
#: Attempts at starting a worker node: ``ray start`` gives its raylet a fixed 30 s to register, which a loaded
#: machine (a shared CI runner) can miss.
NODE_START_ATTEMPTS = 3


@dataclass
class RayNode:
    """A running worker node: its ``ray start`` process (the group leader), name, log and logical GPUs."""

    name: str
    process: subprocess.Popen
    log: Path
    num_gpus: int

    def raylet_pid(self) -> int:
        """The PID of this node's raylet (a child of its ``ray start`` process)."""
        import psutil

        for child in psutil.Process(self.process.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if Path(child.cmdline()[0]).name == "raylet":
                    return child.pid
        raise ServiceError(f"no raylet among the processes of node {self.name}:\n{log_tail(self.log)}")

    def kill_raylet(self) -> int:
        """SIGKILL the raylet (what a lost machine looks like to the cluster), then end the node's group."""
        pid = self.raylet_pid()
        os.kill(pid, signal.SIGKILL)
        end_group(self.process, grace=10)
        return pid

    def stop(self) -> None:
        end_group(self.process)


@dataclass
class LocalCluster:
    """A head and its worker nodes (node addresses 127.0.0.1, token auth); :meth:`stop` ends them all (also what
    was added later)."""

    head: RayHead
    env: dict[str, str] = field(default_factory=dict, repr=False)
    workers: list[RayNode] = field(default_factory=list)
    _started: int = 0

    @property
    def address(self) -> str:
        """The GCS address a driver passes to ``ray.init`` / ``--address``."""
        return self.head.gcs_address

    @property
    def token(self) -> str | None:
        """The cluster's Ray token (never print it)."""
        return self.head.token

    def client_env(self) -> dict[str, str]:
        """What a driver (``ray.init(address=...)``) or a Jobs client of this cluster holds in its environment:
        ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` (never print it)."""
        return auth_env(self.token)

    def add_worker(self, *, num_gpus: int = 2, num_cpus: int = 4, timeout: float = 120.0) -> RayNode:
        """Start a worker node and wait until the head counts it alive (tried again, under a new name, when
        ``ray start`` gives up on a loaded machine)."""
        for attempt in range(1, NODE_START_ATTEMPTS + 1):
            node = self._start_worker(num_gpus, num_cpus)
            try:
                self.wait_for_nodes({node.name}, node, timeout)
                return node
            except ServiceError:
                node.stop()
                self.workers.remove(node)
                if attempt == NODE_START_ATTEMPTS or self.head.process.poll() is not None:
                    raise
        raise AssertionError("unreachable")

    def _start_worker(self, num_gpus: int, num_cpus: int) -> RayNode:
        self._started += 1
        name = f"worker-{self._started}"
        log = self.head.temp_dir / f"{name}.log"
        command = [str(Path(sys.executable).with_name("ray")), "start", "--address", self.address, "--block",
                   "--node-ip-address", LOOPBACK, "--node-name", name, "--num-cpus", str(num_cpus),
                   "--num-gpus", str(num_gpus), "--disable-usage-stats"]
        for option in WORKER_PORT_OPTIONS:
            command += [f"--{option}", str(free_port())]
        with log.open("w") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                                       env=head_env(self.head.token, self.env))
        node = RayNode(name, process, log, num_gpus)
        self.workers.append(node)
        return node

    def alive_nodes(self, retry_s: float = 0.0) -> dict[str, str]:
        """Node name -> node id of every alive node, as the head's GCS sees them ({} while it does not answer:
        a loaded machine can keep the GCS busy past the client's 5 s connection timeout); asked again for up to
        ``retry_s`` seconds while the answer is {} (a cluster that has nodes)."""
        from ray._raylet import GcsClient

        deadline = time.monotonic() + retry_s
        while True:
            try:
                with token_auth(self.token):
                    infos = GcsClient(address=self.address).get_all_node_info(timeout=30).values()
                alive = {info.node_name: info.node_id.hex() for info in infos if info.state == 0}  # ALIVE
            except Exception:  # ray.exceptions.RpcError and its kin: not answering (yet)
                alive = {}
            if alive or time.monotonic() >= deadline:
                return alive
            time.sleep(1.0)

    def wait_for_nodes(self, names: set[str], node: RayNode, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not names <= set(self.alive_nodes()):
            if self.head.process.poll() is not None:
                raise ServiceError(f"the Ray head exited with {self.head.process.returncode}:\n"
                                   f"{log_tail(self.head.log)}")
            if node.process.poll() is not None:
                raise ServiceError(f"ray node {node.name} exited with {node.process.returncode}:\n{log_tail(node.log)}")
            if time.monotonic() > deadline:
                raise ServiceError(f"ray node {node.name} did not join within {timeout:.0f} s:\n{log_tail(node.log)}")
            time.sleep(0.5)

    def wait_until_gone(self, node: RayNode, timeout: float = 60.0) -> None:
        """Until the head (answering) no longer counts ``node`` alive."""
        deadline = time.monotonic() + timeout
        while True:
            alive = self.alive_nodes()
            if alive and node.name not in alive:
                return
            if time.monotonic() > deadline:
                raise ServiceError(f"the head still counts {node.name} alive after {timeout:.0f} s")
            time.sleep(0.5)

    def stop(self) -> None:
        """Workers first (their raylets would otherwise wait for the head), then the head."""
        for node in self.workers:
            node.stop()
        self.head.stop()


def start_cluster(*, workers: int = 2, gpus_per_worker: int = 2, cpus_per_worker: int = 4, head_cpus: int = 1,
                  env: Mapping[str, str] | None = None, timeout: float = 180.0,
                  token: str | None = None) -> LocalCluster:
    """A head (``head_cpus`` CPUs, no GPU) and ``workers`` worker nodes, with token auth; stopped here when any
    fails to start. ``env``: what every node holds in its environment (its workers inherit it; Ray's auth
    variables in it are ignored). ``token``: the cluster's (a restarted cluster keeps its token), else a new one."""
    # Ray's single-machine mode ("0", head_env's default) refuses worker nodes. Cluster mode listens on every
    # interface (the node addresses stay 127.0.0.1, the bind addresses do not): hence the token.
    node_env = {**FAST_FAILURE_DETECTION, **(env or {}), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"}
    cluster = _start_head(head_cpus, node_env, timeout, token)
    try:
        for _ in range(workers):
            cluster.add_worker(num_gpus=gpus_per_worker, num_cpus=cpus_per_worker, timeout=timeout)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_head(num_cpus: int, env: dict[str, str], timeout: float, token: str | None = None) -> LocalCluster:
    """A head with token auth (``token``, else one drawn here) whose own node the GCS counts alive (``ray start
    --head`` gives its raylet a fixed 30 s, which a loaded machine can miss: the head then exits, and is started
    again)."""
    token = token or secrets.token_hex(32)
    for attempt in range(1, NODE_START_ATTEMPTS + 1):
        cluster = LocalCluster(start_head(num_cpus=num_cpus, num_gpus=0, token=token, env=env, timeout=timeout), env)
        deadline = time.monotonic() + timeout
        while cluster.head.process.poll() is None and not cluster.alive_nodes() and time.monotonic() < deadline:
            time.sleep(0.5)
        if cluster.head.process.poll() is None and cluster.alive_nodes():
            return cluster
        failure = log_tail(cluster.head.log)
        cluster.head.stop()
        if attempt == NODE_START_ATTEMPTS:
            raise ServiceError(f"the Ray head did not start ({attempt} attempts):\n{failure}")
    raise AssertionError("unreachable")


@contextlib.contextmanager
def ray_cluster(**options: object) -> Iterator[LocalCluster]:
    """:func:`start_cluster` as a context: every node stopped on exit, also when the body fails."""
    cluster = start_cluster(**options)  # type: ignore[arg-type]
    try:
        yield cluster
    finally:
        cluster.stop()
