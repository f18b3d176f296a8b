"""The RayJob entrypoint check: it parses with ``sentsweep.cli.build_parser()``, names a config that is in the
ConfigMap mounted on the head, the config validates with :func:`~sentsweep.platform.config.parse_sweep_config`
(``--set`` overrides applied), a trial's resources fit a worker group, and, when the job retries
(``backoffLimit`` > 0), the retry continues the sweep (``--resume-interrupted``) whose state is in shared
storage and runs on a tracking server; and the driver runs on a worker, not on the head: the RayJob's
``entrypointResources`` ask for a custom resource that a worker group offers (``rayStartParams.resources``)
and the head does not, with the CPUs of ``entrypointNumCpus``.
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
from sentsweep.platform.config import parse_sweep_config
from sentsweep.yaml_io import apply_overrides
from tools.k8s_check.objects import GPU_RESOURCE, Problem, cpu_quantity, get_path, object_id, ray_cluster_spec


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
    raw, where = _mounted_file(job, everything, args.config)
    if raw is None:
        return [Problem(oid, "entrypoint", where)]
    try:
        loaded = yaml.safe_load(raw)
        if isinstance(loaded, dict):
            loaded = apply_overrides(loaded, args.overrides)
        config = parse_sweep_config(loaded, where)
    except (ConfigError, yaml.YAMLError) as exc:
        return [Problem(oid, "entrypoint", str(exc))]
    found = []
    if (get_path(job, "spec", "backoffLimit") or 0) > 0:
        if not args.resume_interrupted:
            found.append(f"'{text}': backoffLimit retries it, but without --resume-interrupted a retry starts "
                         "the sweep over")
        if not config.is_remote_storage:
            found.append(f"{where}: backoffLimit retries on a new cluster, but storage_path "
                         f"'{config.storage_path}' is not shared storage (s3://...)")
        if not config.tracking.uri.startswith(("http://", "https://")):
            found.append(f"{where}: backoffLimit retries on a new cluster, but tracking.uri "
                         f"'{config.tracking.uri}' is not a tracking server")
    if not _fits(ray_cluster_spec(job) or {}, config.resources.cpu, config.resources.gpu):
        found.append(f"{where}: no worker group fits a trial's resources (cpu {config.resources.cpu}, "
                     f"gpu {config.resources.gpu})")
    return [Problem(oid, "entrypoint", m) for m in found + driver_placement(job)]


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


def driver_placement(job: dict[str, Any]) -> list[str]:
    """Where the RayJob's driver may run is wrong: it can land on the head, or on no group at all."""
    spec = job.get("spec") or {}
    cluster = spec.get("rayClusterSpec") or {}
    try:
        wanted = json.loads(spec.get("entrypointResources") or "{}")
    except ValueError:
        return [f"entrypointResources {spec.get('entrypointResources')!r} is not JSON"]
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


def _mounted_file(job: dict[str, Any], everything: list[dict[str, Any]], path: str) -> tuple[str | None, str]:
    """The text of ``path`` as the head container sees it through a ConfigMap volume, or the error."""
    head = get_path(job, "spec", "rayClusterSpec", "headGroupSpec", "template", "spec") or {}
    volumes = {v.get("name"): v for v in head.get("volumes") or []}
    target = PurePosixPath(path)
    for mount in get_path(head, "containers", 0, "volumeMounts") or []:
        root = PurePosixPath(mount.get("mountPath", "/"))
        if not target.is_relative_to(root) or target == root:
            continue
        source = get_path(volumes.get(mount.get("name")), "configMap")
        if source is None:
            return None, f"{path} is on volume '{mount.get('name')}', which is not a ConfigMap"
        name = source.get("name")
        maps = [o for o in everything if o.get("kind") == "ConfigMap" and get_path(o, "metadata", "name") == name
                and get_path(o, "metadata", "namespace") == get_path(job, "metadata", "namespace")]
        if not maps:
            return None, f"{path}: ConfigMap '{name}' does not exist"
        relative = str(target.relative_to(root))
        keys = {item["path"]: item["key"] for item in source.get("items") or []} or None
        key = keys.get(relative) if keys is not None else relative
        data = maps[0].get("data") or {}
        if key not in data:
            return None, f"{path} is not in ConfigMap '{name}' (it holds {', '.join(sorted(data)) or 'nothing'})"
        return data[key], f"{path} (ConfigMap {name})"
    return None, f"{path} is not on a ConfigMap mounted in the head container"


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
