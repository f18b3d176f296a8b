"""Where pods run: node disk (ephemeral storage) and spot capacity.

- **node disk**: in a pod with disk-backed emptyDirs that have a ``sizeLimit``, every container (init containers
  and the Ray autoscaler sidecar of the head included) has ``requests`` and ``limits`` for ``ephemeral-storage``,
  and the limits of the pod's containers add up to at least the emptyDirs' sizeLimits. The scheduler places pods on
  a node's disk by their requests only (a sizeLimit evicts the pod that passes it, but reserves nothing), and the
  kubelet evicts a pod whose disk use passes the sum of its containers' limits, so limits below the sizeLimits
  would evict it before its emptyDirs fill. Memory-backed emptyDirs (``medium: Memory``) count as memory, not disk.
- **spot capacity**: when the objects deploy a spot group (a pod whose required node affinity selects a spot
  label of :data:`SPOT_LABELS` with ``In``), every other pod template (Ray heads and their other groups, RayJob
  submitters, PostgreSQL, MinIO, MLflow, the Jobs and CronJobs) excludes every one of those labels in each of its
  required ``nodeSelectorTerms`` (``NotIn`` the spot value, ``DoesNotExist``, or ``In`` other values; or a
  ``nodeSelector`` with another value): terms are ORed, so one term without the exclusion lets the pod onto spot
  nodes, where a reclaim takes the head (and every sweep with it) or ``postgres-0`` (and the tracking server).
  A taint on the spot pools is not enough: GKE's spot pools and EKS's spot node groups are not tainted by default.
"""

from __future__ import annotations

from typing import Any

from tools.k8s_check.objects import (
    PodSpec,
    Problem,
    containers,
    format_bytes,
    get_path,
    object_id,
    pod_specs,
    quantity,
    ray_cluster_spec,
)

EPHEMERAL = "ephemeral-storage"
#: The node labels that mark spot/preemptible capacity, with their spot value: GKE, EKS managed node groups, AKS,
#: Karpenter, and the project's own (k8s/components/spot-gpu).
SPOT_LABELS = {
    "sentsweep/capacity": "spot",
    "cloud.google.com/gke-spot": "true",
    "eks.amazonaws.com/capacityType": "SPOT",
    "kubernetes.azure.com/scalesetpriority": "spot",
    "karpenter.sh/capacity-type": "spot",
}


def _sized_emptydirs(pod: PodSpec) -> float:
    """The sum of the sizeLimits of the pod's disk-backed emptyDirs, in bytes."""
    return sum(quantity(get_path(v, "emptyDir", "sizeLimit")) for v in pod.spec.get("volumes") or []
               if get_path(v, "emptyDir", "sizeLimit") is not None and get_path(v, "emptyDir", "medium") != "Memory")


def _pod_containers(obj: dict[str, Any], pod: PodSpec) -> list[tuple[str, dict[str, Any]]]:
    """``(where, container)`` of every container of the pod: its own, and the autoscaler of an autoscaling head."""
    found = containers(pod)
    cluster = ray_cluster_spec(obj)
    if cluster and cluster.get("enableInTreeAutoscaling") and pod.where.endswith("headGroupSpec.template.spec"):
        prefix = "spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec"
        found.append((f"{prefix}.autoscalerOptions", cluster.get("autoscalerOptions") or {}))
    return found


def check_ephemeral_storage(obj: dict[str, Any]) -> list[Problem]:
    """Containers of pods with sized emptyDirs request and limit ephemeral-storage, and the limits cover the sizes."""
    oid = object_id(obj)
    found = []
    for pod in pod_specs(obj):
        sized = _sized_emptydirs(pod)
        if not sized:
            continue
        members = _pod_containers(obj, pod)
        for where, c in members:
            missing = [kind for kind in ("requests", "limits")
                       if EPHEMERAL not in (get_path(c, "resources", kind) or {})]
            if missing:
                found.append(f"{where}: no {' and '.join(missing)} for {EPHEMERAL} (its pod's emptyDirs may hold "
                             f"{format_bytes(sized)} of node disk, and the scheduler counts only requests)")
        limits = [get_path(c, "resources", "limits", EPHEMERAL) for where, c in members
                  if ".initContainers[" not in where]  # an init container's disk is not the running pod's
        if all(limit is not None for limit in limits) and sum(map(quantity, limits)) < sized:
            total = format_bytes(sum(map(quantity, limits)))
            found.append(f"{pod.where}: its containers' {EPHEMERAL} limits ({total}) are below its emptyDirs' "
                         f"sizeLimits ({format_bytes(sized)}): the kubelet evicts the pod before they fill")
    return [Problem(oid, "scheduling", m) for m in found]


def _required_terms(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return get_path(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms") or []


def runs_on_spot(spec: dict[str, Any]) -> bool:
    """Whether a pod spec asks for spot nodes (a required term, or its nodeSelector, selects a spot label)."""
    selector = spec.get("nodeSelector") or {}
    return any(selector.get(key) == value for key, value in SPOT_LABELS.items()) or any(
        e.get("operator") == "In" and SPOT_LABELS.get(e.get("key")) in (e.get("values") or [])
        for term in _required_terms(spec) for e in term.get("matchExpressions") or [])


def _excludes(expression: dict[str, Any], key: str, value: str) -> bool:
    """Whether a node selector requirement keeps pods off nodes labelled ``key=value``."""
    if expression.get("key") != key:
        return False
    operator, values = expression.get("operator"), expression.get("values") or []
    return operator == "DoesNotExist" or (operator == "NotIn" and value in values) or \
        (operator == "In" and value not in values)


def spot_labels_allowed(spec: dict[str, Any]) -> list[str]:
    """The spot labels (``key=value``) that some required term of ``spec`` (or the lack of one) lets a pod onto.

    A term without requirements matches no node (Kubernetes' NodeSelectorTerm), so it lets the pod nowhere; a spec
    without required terms lets it anywhere."""
    selector = spec.get("nodeSelector") or {}
    required = _required_terms(spec)
    terms = [t for t in required if t.get("matchExpressions") or t.get("matchFields")] if required else [{}]
    return [f"{key}={value}" for key, value in SPOT_LABELS.items()
            if not (key in selector and selector[key] != value)
            and any(not any(_excludes(e, key, value) for e in term.get("matchExpressions") or []) for term in terms)]


def check_spot_placement(everything: list[dict[str, Any]]) -> list[Problem]:
    """With a spot group among the objects, every other pod template stays off spot nodes."""
    pods = [(obj, pod) for obj in everything for pod in pod_specs(obj)]
    if not any(runs_on_spot(pod.spec) for _, pod in pods):
        return []
    found = []
    for obj, pod in pods:
        allowed = [] if runs_on_spot(pod.spec) else spot_labels_allowed(pod.spec)
        if allowed:
            found.append(Problem(object_id(obj), "scheduling", (
                f"{pod.where}: may be placed on spot nodes ({', '.join(allowed)}): a spot group is deployed, and "
                "every other pod needs required nodeAffinity excluding each spot label in every nodeSelectorTerm")))
    return found
