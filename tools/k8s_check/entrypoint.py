"""The RayJob entrypoint check: it parses with ``sentsweep.cli.build_parser()``, names a config that is in a
mounted ConfigMap, and every group that can run the driver mounts it (:func:`driver_groups`: the worker groups
whose ``rayStartParams.resources`` include every key of ``entrypointResources``, the head when it offers them
too or when ``entrypointResources`` is empty), the config validates with
:func:`~sentsweep.platform.config.parse_sweep_config` (``--set`` overrides applied), a trial's resources fit a
worker group, and, when the job retries (``backoffLimit`` > 0), the retry continues the sweep
(``--resume-interrupted``) whose state is in shared storage and runs on a tracking server; and the driver runs
on a worker, not on the head: the RayJob's ``entrypointResources`` ask for a custom resource that a worker
group offers (``rayStartParams.resources``) and the head does not, with the CPUs of ``entrypointNumCpus``.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

import yaml

from sentsweep.cli import build_parser
from sentsweep.errors import ConfigError
from sentsweep.platform.config import is_shared_folder, parse_sweep_config
from sentsweep.yaml_io import apply_overrides
from tools.k8s_check.objects import (
    GPU_RESOURCE,
    Problem,
    cpu_quantity,
    get_path,
    object_id,
    pod_specs,
    ray_cluster_spec,
)


def check_entrypoint(job: dict[str, Any], everything: list[dict[str, Any]]) -> list[Problem]:
    """A RayJob's entrypoint parses, names a mounted config that validates and fits the cluster."""
    if job.get("kind") != "RayJob":
        return []
    oid = object_id(job)
    text = str(get_path(job, "spec", "entrypoint") or "")
    argv = shlex.split(text)
    if argv[:1] != ["sentsweep"]:
        return [Problem(oid, "entrypoint", f"'{text}' does not run sentsweep")]
    args, error = parse_cli(argv[1:])
    if args is None:
        return [Problem(oid, "entrypoint", f"'{text}': {error}")]
    if args.command == "resume":
        return [] if "://" in args.sweep_dir else [
            Problem(oid, "entrypoint", f"resume of '{args.sweep_dir}': a new cluster sees only shared storage")]
    if args.command != "sweep":
        return [Problem(oid, "entrypoint", f"'{text}': a RayJob runs `sentsweep sweep` or `sentsweep resume`")]
    groups = driver_groups(job)
    # the file as a group that can run the driver sees it, else as any Ray group that mounts it does
    pods = [pod for _, pod in groups] + [pod.spec for pod in pod_specs(job) if pod.group is not None]
    readers = [(pod, mount) for pod in pods if (mount := _mount(pod, args.config)) is not None]
    if not readers:
        return [Problem(oid, "entrypoint", f"{args.config} is not on a volume mounted in the Ray cluster")]
    pod, mount = readers[0]
    resources = get_path(job, "spec", "entrypointResources") or "{}"
    mounts = [Problem(oid, "entrypoint", f"{name} can run the driver (entrypointResources {resources}) but does "
                                         f"not mount {mount.get('mountPath')}, where the entrypoint reads "
                                         f"{args.config}")
              for name, group_pod in groups if _mount(group_pod, args.config) is None]
    raw, where = _mounted_file(pod, mount, job, everything, args.config)
    if raw is None:
        return mounts + [Problem(oid, "entrypoint", where)]
    try:
        loaded = yaml.safe_load(raw)
        if isinstance(loaded, dict):
            loaded = apply_overrides(loaded, args.overrides)
        config = parse_sweep_config(loaded, where)
    except (ConfigError, yaml.YAMLError) as exc:
        return mounts + [Problem(oid, "entrypoint", str(exc))]
    found = []
    if (get_path(job, "spec", "backoffLimit") or 0) > 0:
        if not args.resume_interrupted:
            found.append(f"'{text}': backoffLimit retries it, but without --resume-interrupted a retry starts "
                         "the sweep over")
        if not is_shared_folder(config.storage_path):
            found.append(f"{where}: backoffLimit retries on a new cluster, but storage_path "
                         f"'{config.storage_path}' is not shared storage (s3://...)")
        if not config.tracking.uri.startswith(("http://", "https://")):
            found.append(f"{where}: backoffLimit retries on a new cluster, but tracking.uri "
                         f"'{config.tracking.uri}' is not a tracking server")
    if not _fits(ray_cluster_spec(job) or {}, config.resources.cpu, config.resources.gpu):
        found.append(f"{where}: no worker group fits a trial's resources (cpu {config.resources.cpu}, "
                     f"gpu {config.resources.gpu})")
    return mounts + [Problem(oid, "entrypoint", m) for m in found + driver_placement(job)]


def custom_resources(ray_start_params: dict[str, Any]) -> dict[str, float]:
    """The custom resources of ``rayStartParams.resources`` (KubeRay's ``'"{\\"name\\": 1}"'``)."""
    text = str(ray_start_params.get("resources") or "").strip()
    if text.startswith('"') and text.endswith('"'):
        text = text[1:-1].replace('\\"', '"')
    try:
        loaded = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def _wanted_resources(job: dict[str, Any]) -> dict[str, Any] | None:
    """The RayJob's ``entrypointResources`` (None when it is not a JSON object)."""
    try:
        wanted = json.loads(get_path(job, "spec", "entrypointResources") or "{}")
    except ValueError:
        return None
    return wanted if isinstance(wanted, dict) else None


def driver_groups(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(name, pod spec)`` of every group of the RayJob's cluster that can run its driver: the worker groups
    whose ``rayStartParams.resources`` include every key of ``entrypointResources``, and the head when it does
    too (so every group when ``entrypointResources`` is empty, or not JSON: driver_placement reports that)."""
    cluster = get_path(job, "spec", "rayClusterSpec") or {}
    wanted = _wanted_resources(job) or {}
    groups = [("the head group", cluster.get("headGroupSpec") or {})] + [
        (f"worker group {g.get('groupName')}", g) for g in cluster.get("workerGroupSpecs") or []]
    return [(name, get_path(group, "template", "spec") or {}) for name, group in groups
            if set(wanted) <= set(custom_resources(group.get("rayStartParams") or {}))]


def driver_placement(job: dict[str, Any]) -> list[str]:
    """Where the RayJob's driver may run is wrong: it can land on the head, or on no group at all."""
    spec = job.get("spec") or {}
    cluster = spec.get("rayClusterSpec") or {}
    wanted = _wanted_resources(job)
    if wanted is None:
        return [f"entrypointResources {spec.get('entrypointResources')!r} is not a JSON object"]
    head = custom_resources(get_path(cluster, "headGroupSpec", "rayStartParams") or {})
    if not wanted or any(name in head for name in wanted):
        return ["the driver may run on the head: entrypointResources must ask for a custom resource that only "
                "worker groups offer (rayStartParams.resources)"]
    cpus = float(spec.get("entrypointNumCpus") or 0)
    for group in cluster.get("workerGroupSpecs") or []:
        offered = custom_resources(group.get("rayStartParams") or {})
        if group.get("maxReplicas") and all(offered.get(k, 0) >= float(v) for k, v in wanted.items()) \
                and _fits({"workerGroupSpecs": [group]}, cpus, 0):
            return []
    return [f"no worker group offers the driver's resources (entrypointResources {json.dumps(wanted)}, "
            f"entrypointNumCpus {cpus:g})"]


def parse_cli(argv: Sequence[str]) -> tuple[Any, str]:
    """``sentsweep`` arguments parsed by the real CLI parser: ``(namespace, "")`` or ``(None, error)``."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return build_parser().parse_args(list(argv)), ""
    except SystemExit:
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        return None, lines[-1] if lines else "invalid arguments"


def _mount(pod: dict[str, Any], path: str) -> dict[str, Any] | None:
    """The volumeMount of the pod's Ray container (its first) that ``path`` lies under (None when none)."""
    target = PurePosixPath(path)
    for mount in get_path(pod, "containers", 0, "volumeMounts") or []:
        root = PurePosixPath(mount.get("mountPath", "/"))
        if target.is_relative_to(root) and target != root:
            return mount
    return None


def _mounted_file(pod: dict[str, Any], mount: dict[str, Any], job: dict[str, Any],
                  everything: list[dict[str, Any]], path: str) -> tuple[str | None, str]:
    """The text of ``path`` as the Ray container of ``pod`` sees it through ``mount`` (a ConfigMap volume), or
    the error."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    source = get_path(volumes.get(mount.get("name")), "configMap")
    if source is None:
        return None, f"{path} is on volume '{mount.get('name')}', which is not a ConfigMap"
    name = source.get("name")
    maps = [o for o in everything if o.get("kind") == "ConfigMap" and get_path(o, "metadata", "name") == name
            and get_path(o, "metadata", "namespace") == get_path(job, "metadata", "namespace")]
    if not maps:
        return None, f"{path}: ConfigMap '{name}' does not exist"
    relative = str(PurePosixPath(path).relative_to(mount.get("mountPath", "/")))
    keys = {item["path"]: item["key"] for item in source.get("items") or []} or None
    key = keys.get(relative) if keys is not None else relative
    data = maps[0].get("data") or {}
    if key not in data:
        return None, f"{path} is not in ConfigMap '{name}' (it holds {', '.join(sorted(data)) or 'nothing'})"
    return data[key], f"{path} (ConfigMap {name})"


def _fits(cluster: dict[str, Any], cpu: float, gpu: float) -> bool:
    for group in cluster.get("workerGroupSpecs") or []:
        if not group.get("maxReplicas"):
            continue
        container = get_path(group, "template", "spec", "containers", 0) or {}
        limits = get_path(container, "resources", "limits") or {}
        params = group.get("rayStartParams") or {}
        try:
            cpus = cpu_quantity(params.get("num-cpus", limits.get("cpu", 0)))
            gpus = float(params.get("num-gpus", limits.get(GPU_RESOURCE, 0)))
        except ValueError:
            continue
        if cpus >= cpu and gpus >= gpu:
            return True
    return False
