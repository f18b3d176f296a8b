"""Schema checks: core kinds with ``kubernetes-validate --strict`` (unknown fields rejected); RayCluster and
RayJob against KubeRay's CRD schemas (:mod:`tools.k8s_check.crd`) plus a strict pass that rejects fields the
schema does not name (their ``metadata`` as a strict ObjectMeta)."""

from __future__ import annotations

import functools
import json
from typing import Any

from tools.k8s_check import crd
from tools.k8s_check.kubectl import ManifestError
from tools.k8s_check.objects import Problem, object_id

KUBERNETES_VERSION = "1.33"


def check_schema(obj: dict[str, Any], kubernetes_version: str = KUBERNETES_VERSION) -> list[Problem]:
    """Schema problems of one object (core: kubernetes-validate --strict; Ray: CRD schema + strict walk). The
    answer depends on the object alone, so an object met before (another overlay's copy) is not checked again."""
    try:
        text = json.dumps(obj, sort_keys=True)
    except (TypeError, ValueError):  # a value JSON cannot hold (a YAML date): checked as it is
        return _check_schema(obj, kubernetes_version)
    return list(_schema_problems(text, kubernetes_version))


@functools.lru_cache(maxsize=4096)
def _schema_problems(text: str, kubernetes_version: str) -> tuple[Problem, ...]:
    return tuple(_check_schema(json.loads(text), kubernetes_version))


def _check_schema(obj: dict[str, Any], kubernetes_version: str) -> list[Problem]:
    oid = object_id(obj)
    if crd.is_ray_object(obj):
        problems = [Problem(oid, "schema", m) for m in crd.schema_errors(obj)]
        problems += [Problem(oid, "strict", m) for m in crd.unknown_fields(obj)]
        meta = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj.get("metadata") or {}}
        problems += [Problem(oid, "strict", m) for m in _kubernetes_validate(meta, kubernetes_version)]
        return problems
    return [Problem(oid, "schema", m) for m in _kubernetes_validate(obj, kubernetes_version)]


def _kubernetes_validate(obj: dict[str, Any], version: str) -> list[str]:
    try:
        import kubernetes_validate
    except ImportError:
        raise ManifestError("kubernetes-validate is not installed: pip install -e '.[dev]'") from None
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{crd.format_path(exc.path) or '(top)'}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {obj.get('apiVersion')} {obj.get('kind')} in Kubernetes {version}"]
    return []
