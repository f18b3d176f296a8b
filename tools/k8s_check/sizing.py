"""The tracking server's size: workers, the basic-auth cache, and PostgreSQL's connection budget.

The MLflow Deployment takes its settings from a ConfigMap (``envFrom``) holding ``MLFLOW_WORKERS``; each
uvicorn worker process opens up to :data:`ENGINES_PER_WORKER` SQLAlchemy engines (MLflow 3.17: the
tracking, model-registry and jobs stores keep one engine each per database URI, the basic-auth store
one), each of at most ``MLFLOW_SQLALCHEMYSTORE_POOL_SIZE`` + ``MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW``
connections. With ``pods`` = replicas + the rolling update's surge, the worst case

    pods x MLFLOW_WORKERS x ENGINES_PER_WORKER x (pool + overflow)

must stay within PostgreSQL's ``max_connections`` (its container's ``-c max_connections=N``; 100 when
unset) less :data:`RESERVED_CONNECTIONS` (superuser slots, the migration init container, the backup,
an operator's psql). ``AUTH_CACHE_TTL_SECONDS`` (written into the basic-auth config as
``auth_cache_ttl_seconds``) must be positive: without the cache every request re-hashes the password.
``MLFLOW_SERVER_ENABLE_JOB_EXECUTION`` must be ``false`` (MLflow's default is on): the job runner's huey
consumers and job subprocesses open database connections outside that budget.
"""

from __future__ import annotations

import math
import re
from typing import Any

from tools.k8s_check.objects import Problem, containers, get_path, object_id, pod_specs

ENGINES_PER_WORKER = 4
RESERVED_CONNECTIONS = 10
POSTGRES_DEFAULT_MAX_CONNECTIONS = 100
MIN_WORKERS = 4
_MAX_CONNECTIONS = re.compile(r"max_connections=(\d+)")


def _config_maps(everything: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    return {get_path(o, "metadata", "name"): o.get("data") or {} for o in everything if o.get("kind") == "ConfigMap"}


def _mlflow_settings(obj: dict[str, Any], maps: dict[str, dict[str, str]]) -> dict[str, str] | None:
    """The settings ConfigMap a Deployment's containers read through envFrom, when it holds MLFLOW_WORKERS."""
    for pod in pod_specs(obj):
        for _, c in containers(pod):
            for source in c.get("envFrom") or []:
                data = maps.get(get_path(source, "configMapRef", "name")) or {}
                if "MLFLOW_WORKERS" in data:
                    return data
    return None


def surge_pods(obj: dict[str, Any], replicas: int) -> int:
    """The pods a rolling update of a Deployment or StatefulSet adds beyond ``replicas`` (its maxSurge)."""
    surge = get_path(obj, "spec", "strategy", "rollingUpdate", "maxSurge")
    if get_path(obj, "spec", "strategy", "type") == "Recreate":
        return 0
    surge = "25%" if surge is None else str(surge)  # the Deployment default
    return math.ceil(replicas * int(surge[:-1]) / 100) if surge.endswith("%") else int(surge)


def postgres_max_connections(everything: list[dict[str, Any]]) -> int | None:
    """``max_connections`` of the PostgreSQL StatefulSet (None when there is none)."""
    for obj in everything:
        if obj.get("kind") != "StatefulSet" or get_path(obj, "metadata", "name") != "postgres":
            continue
        args = " ".join(str(a) for pod in pod_specs(obj) for _, c in containers(pod) for a in c.get("args") or [])
        match = _MAX_CONNECTIONS.search(args)
        return int(match.group(1)) if match else POSTGRES_DEFAULT_MAX_CONNECTIONS
    return None


def check_tracking_server(everything: list[dict[str, Any]]) -> list[Problem]:
    """Workers, auth cache and connection budget of every Deployment configured like the MLflow server."""
    maps = _config_maps(everything)
    limit = postgres_max_connections(everything)
    found: list[Problem] = []
    for obj in everything:
        settings = _mlflow_settings(obj, maps) if obj.get("kind") == "Deployment" else None
        if settings is None:
            continue
        oid = object_id(obj)
        try:
            workers = int(settings["MLFLOW_WORKERS"])
            per_engine = int(settings.get("MLFLOW_SQLALCHEMYSTORE_POOL_SIZE", 5)) + int(
                settings.get("MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW", 10))  # SQLAlchemy's QueuePool defaults
            cache_ttl = int(settings.get("AUTH_CACHE_TTL_SECONDS", 0))
        except ValueError as exc:
            found.append(Problem(oid, "sizing", f"a setting is not an integer: {exc}"))
            continue
        if workers < MIN_WORKERS:
            found.append(Problem(oid, "sizing", f"MLFLOW_WORKERS={workers}: at least {MIN_WORKERS} per pod"))
        if cache_ttl <= 0:
            found.append(Problem(oid, "sizing", "AUTH_CACHE_TTL_SECONDS is not positive: the basic-auth cache is "
                                                "off and every request re-hashes the password"))
        if str(settings.get("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "true")).lower() != "false":
            found.append(Problem(oid, "sizing", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION is not false: the job runner's "
                                                "processes and connections are outside the connection budget"))
        replicas = int(get_path(obj, "spec", "replicas") or 1)
        pods = replicas + surge_pods(obj, replicas)
        worst = pods * workers * ENGINES_PER_WORKER * per_engine
        if limit is not None and worst > limit - RESERVED_CONNECTIONS:
            found.append(Problem(oid, "sizing", (
                f"up to {worst} PostgreSQL connections ({pods} pods incl. surge x {workers} workers x "
                f"{ENGINES_PER_WORKER} engines x {per_engine} pool+overflow) exceed max_connections {limit} less "
                f"{RESERVED_CONNECTIONS} reserved")))
    return found
