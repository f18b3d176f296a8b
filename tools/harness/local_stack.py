"""The cluster path of docs/deploy.md on one machine: an S3 endpoint (:mod:`~tools.harness.s3_server`),
PostgreSQL (:mod:`~tools.harness.postgres`), an MLflow tracking server on it with its artifacts proxied to the
S3 bucket (:mod:`~tools.harness.mlflow_server`) and a Ray head with worker nodes
(:mod:`~tools.harness.ray_cluster`, with token auth), every node holding the S3 and MLflow client variables as a
cluster's pods hold their Secrets.

Each part can be lost and brought back alone: :meth:`LocalStack.restart_ray` (a lost head: every node stopped,
a fresh cluster started; S3, PostgreSQL and MLflow keep running), ``stack.mlflow.restart()`` (PostgreSQL keeps
running), ``stack.ray.workers[i].kill_raylet()`` then ``stack.ray.add_worker()``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.harness.mlflow_server import AUTH_DB, RUNS_DB, MlflowServer, mlflow_server
from tools.harness.postgres import postgres_server
from tools.harness.ray_cluster import LocalCluster, start_cluster
from tools.harness.s3_server import S3Server, s3_server

ARTIFACTS_PREFIX = "mlflow-artifacts"


@dataclass
class LocalStack:
    """The running services (None: not started here, the caller brings its own); :meth:`client_env` is what a
    driver needs to reach them (the Ray cluster's token included: never print it)."""

    s3: S3Server | None
    mlflow: MlflowServer | None
    ray: LocalCluster | None
    ray_options: dict[str, Any] = field(default_factory=dict, repr=False)
    node_names: dict[str, str] = field(default_factory=dict)

    def client_env(self) -> dict[str, str]:
        return {**(self.s3.client_env() if self.s3 else {}), **(self.mlflow.client_env() if self.mlflow else {}),
                **(self.ray.client_env() if self.ray else {})}

    def remember_nodes(self) -> dict[str, str]:
        """Node id -> node name of every node seen alive so far (a lost node keeps its name here)."""
        if self.ray is not None:
            self.node_names.update({node_id: name for name, node_id in self.ray.alive_nodes(retry_s=60).items()})
        return self.node_names

    def restart_ray(self) -> None:
        """Stop every Ray node (the head too), then start a fresh cluster with the same options and token (as a
        cluster's Secret outlives its pods: the drivers' environment from :meth:`client_env` stays valid)."""
        assert self.ray is not None, "no Ray cluster was started here"
        self.remember_nodes()
        token = self.ray.token
        self.ray.stop()
        self.ray = start_cluster(**self.ray_options, token=token)
        self.remember_nodes()


@contextlib.contextmanager
def local_stack(*, s3: bool = True, tracking: bool = True, ray: bool = True, workers: int = 2,
                gpus_per_worker: int = 2, cpus_per_worker: int = 4, node_env: Mapping[str, str] | None = None,
                mlflow_workers: int = 1) -> Iterator[LocalStack]:
    """The services of :class:`LocalStack` that are asked for, started in order (S3, PostgreSQL + MLflow, Ray)
    and stopped in reverse, also when one fails to start. ``node_env``: more for the Ray nodes' environment
    (PYTHONPATH; the S3 and MLflow variables of a service not started here)."""
    with contextlib.ExitStack() as stack:
        bucket = stack.enter_context(s3_server()) if s3 else None
        s3_env = bucket.client_env() if bucket else {}
        server = None
        if tracking:
            postgres = stack.enter_context(postgres_server(databases=(RUNS_DB, AUTH_DB)))
            artifacts = bucket.uri(ARTIFACTS_PREFIX) if bucket else None
            server = stack.enter_context(mlflow_server(workers=mlflow_workers, postgres=postgres, env=s3_env,
                                                       artifacts_destination=artifacts))
        local = LocalStack(bucket, server, None)
        if ray:
            local.ray_options = {"workers": workers, "gpus_per_worker": gpus_per_worker,
                                 "cpus_per_worker": cpus_per_worker,
                                 "env": {**local.client_env(), **(node_env or {})}}
            local.ray = start_cluster(**local.ray_options)
            stack.callback(lambda: local.ray is not None and local.ray.stop())  # the current one, after restarts
            local.remember_nodes()
        yield local
