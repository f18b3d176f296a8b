"""What the checks read from rendered Kubernetes objects: ids, nested fields, pod specs, containers, images."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
#: Where the core workload kinds hold the pod spec they create pods from, by (API group, kind).
WORKLOAD_POD_SPECS = {
    ("", "Pod"): "spec",
    ("", "PodTemplate"): "template/spec",
    ("apps", "Deployment"): "spec/template/spec",
    ("apps", "StatefulSet"): "spec/template/spec",
    ("apps", "DaemonSet"): "spec/template/spec",
    ("apps", "ReplicaSet"): "spec/template/spec",
    ("", "ReplicationController"): "spec/template/spec",
    ("batch", "Job"): "spec/template/spec",
    ("batch", "CronJob"): "spec/jobTemplate/spec/template/spec",
}
_QUANTITY = re.compile(r"^([0-9.]+)(m?)$")
#: The suffixes of resource quantities (``64Mi``, ``1Ti``, ``500M``), as multipliers.
_SUFFIXES = {"": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}
_SIZE = re.compile(r"^([0-9.]+)([KMGTPE]i|[mkMGTPE])?$")


@dataclass(frozen=True)
class Problem:
    """One finding: the object (``Kind/name``), the check that found it and what is wrong."""

    obj: str
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.obj}: {self.message} [{self.check}]"


def object_id(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def get_path(node: Any, *keys: str | int) -> Any:
    """``node[k1][k2]...``, None where a key is missing or the node is of another type."""
    for key in keys:
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return None
    return node


def api_group(obj: dict[str, Any]) -> str:
    """The API group of an object ('' for the core group)."""
    api_version = str(obj.get("apiVersion", ""))
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def ray_cluster_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The cluster spec of a RayCluster or RayJob (None for other kinds)."""
    if obj.get("kind") == "RayCluster":
        return obj.get("spec") or {}
    if obj.get("kind") == "RayJob":
        return get_path(obj, "spec", "rayClusterSpec")
    return None


@dataclass
class PodSpec:
    """A pod spec inside an object, where it is, its labels, and (Ray) its group."""

    where: str
    spec: dict[str, Any]
    labels: dict[str, str]
    group: dict[str, Any] | None = None


def pod_specs(obj: dict[str, Any]) -> list[PodSpec]:
    """Every pod spec an object will create pods from (core workloads, Ray groups, RayJob's submitter)."""
    found: list[PodSpec] = []
    path = WORKLOAD_POD_SPECS.get((api_group(obj), obj.get("kind", "")))
    if path:
        parts = path.split("/")
        template = get_path(obj, *parts[:-1]) or {}  # a Pod is its own template
        labels = get_path(template, "metadata", "labels") or {}
        found.append(PodSpec(path.replace("/", "."), get_path(obj, *parts) or {}, labels))
    cluster = ray_cluster_spec(obj)
    if cluster is not None:
        prefix = "spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec"
        head = cluster.get("headGroupSpec") or {}
        found.append(PodSpec(f"{prefix}.headGroupSpec.template.spec", get_path(head, "template", "spec") or {},
                             get_path(head, "template", "metadata", "labels") or {}, head))
        for i, worker in enumerate(cluster.get("workerGroupSpecs") or []):
            found.append(PodSpec(f"{prefix}.workerGroupSpecs[{i}].template.spec",
                                 get_path(worker, "template", "spec") or {},
                                 get_path(worker, "template", "metadata", "labels") or {}, worker))
    if obj.get("kind") == "RayJob" and get_path(obj, "spec", "submitterPodTemplate"):
        template = obj["spec"]["submitterPodTemplate"]
        found.append(PodSpec("spec.submitterPodTemplate.spec", template.get("spec") or {},
                             get_path(template, "metadata", "labels") or {}))
    return found


def containers(pod: PodSpec) -> list[tuple[str, dict[str, Any]]]:
    """``(where, container)`` for the init containers and containers of a pod spec."""
    return [(f"{pod.where}.{key}[{c.get('name', i)}]", c)
            for key in ("initContainers", "containers") for i, c in enumerate(pod.spec.get(key) or [])]


def cpu_quantity(value: Any) -> float:
    """A CPU quantity (``2``, ``"500m"``, ``"1.5"``) in cores."""
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"not a CPU quantity: {value!r}")
    return float(match.group(1)) / (1000.0 if match.group(2) else 1.0)


def quantity(value: Any) -> float:
    """A resource quantity (``64Mi``, ``1Ti``, ``500M``, ``1024``, ``1e9``) as a plain number (bytes, for storage)."""
    text = str(value).strip()
    try:
        return float(text)  # a plain or decimal-exponent number (``1e9``, ``1E3``); ``1E`` (exa) is not one
    except ValueError:
        pass
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a resource quantity: {value!r}")
    return float(match.group(1)) * _SUFFIXES[match.group(2) or ""]


def format_bytes(size: float) -> str:
    """``size`` bytes in the manifests' units: ``72Gi``, or ``272Mi`` below a whole GiB."""
    gib = size / 2**30
    return f"{gib:g}Gi" if gib == int(gib) else f"{size / 2**20:g}Mi"


def split_image(image: str) -> tuple[str, str, str]:
    """``(name, tag, digest)`` of an image reference (a registry port is not taken for a tag)."""
    name, _, digest = image.partition("@")
    slash = name.find("/")
    colon = name.rfind(":")
    if colon > max(slash, 0) or (slash < 0 and colon >= 0):
        return name[:colon], name[colon + 1:], digest
    return name, "", digest
