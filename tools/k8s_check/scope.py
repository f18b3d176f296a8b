"""What a namespace's kustomization may own: no cluster-scoped object but its own Namespace.

A cluster-scoped object (a PriorityClass, a ClusterRole, a StorageClass, ...) applied with a team's overlay is owned
by that overlay: a ``kubectl delete -k`` of it deletes the object for every namespace that uses it (two teams on
gpu-spot shared ``sentsweep-spot``), and a namespace admin without cluster RBAC cannot apply the overlay at all.
Such objects belong in ``k8s/cluster``, which a cluster admin applies once and the overlays name but do not own.
The Namespace the objects live in is the exception here, when checked together with them (it is namespaced objects'
own, the team example renames it); but it belongs in the cluster admin's namespace kustomization, below.

So when the objects include namespaced ones, every object of a kind in :data:`CLUSTER_SCOPED_KINDS` is refused,
but a Namespace that one of the namespaced objects lives in. A kustomization of cluster-scoped objects only
(``k8s/cluster``) passes.

The namespace's guard rails (:data:`GUARD_RAIL_KINDS`: the Namespace with its Pod Security labels, ResourceQuotas,
LimitRanges) are the cluster admin's, in a kustomization of their own (``k8s/namespace``, the team example's
``namespace``): one that also deploys workloads is refused (:func:`check_guard_rails`). Applied
with the platform, they need rights Kubernetes' namespace ``admin`` role does not give, and given those rights a
team could relax its own Pod Security level, raise its quota or its share of the preempting PriorityClass; and a
``kubectl delete -k`` of the overlay would delete the Namespace, and every volume in it, with the workloads.
"""

from __future__ import annotations

from typing import Any

from tools.k8s_check.objects import Problem, get_path, object_id, pod_specs

#: Kinds of the Kubernetes API (and common add-ons) that are not namespaced.
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "PriorityClass", "ClusterRole", "ClusterRoleBinding", "StorageClass",
    "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass", "VolumeSnapshotClass", "RuntimeClass",
    "IngressClass", "CustomResourceDefinition", "APIService", "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "FlowSchema", "PriorityLevelConfiguration",
    "CertificateSigningRequest", "ClusterTrustBundle", "DeviceClass", "IPAddress", "ServiceCIDR",
})


def check_cluster_scoped(everything: list[dict[str, Any]]) -> list[Problem]:
    """No cluster-scoped object among namespaced ones, but the Namespace they live in."""
    namespaced = [o for o in everything if o.get("kind") not in CLUSTER_SCOPED_KINDS]
    if not namespaced:
        return []
    own = sorted({str(get_path(o, "metadata", "namespace")) for o in namespaced
                  if get_path(o, "metadata", "namespace")})
    return [Problem(object_id(o), "scope", (
        f"cluster-scoped, but deployed with the namespaced objects of {', '.join(own) or 'the default namespace'}: "
        "deleting them (kubectl delete -k) deletes it for every namespace that uses it, and a namespace admin cannot "
        "create it; put it in k8s/cluster (applied once by a cluster admin) and refer to it by name"))
        for o in everything if o.get("kind") in CLUSTER_SCOPED_KINDS
        and not (o.get("kind") == "Namespace" and get_path(o, "metadata", "name") in own)]


#: The kinds that bound what a namespace's users may do, applied by a cluster admin (not with the workloads).
GUARD_RAIL_KINDS = frozenset({"Namespace", "ResourceQuota", "LimitRange"})


def check_guard_rails(objects: list[dict[str, Any]]) -> list[Problem]:
    """The objects of one kustomization: no guard rail (:data:`GUARD_RAIL_KINDS`) among workloads (objects with a pod
    template: what the namespace's users deploy)."""
    if not any(pod_specs(o) for o in objects):
        return []
    return [Problem(object_id(o), "scope", (
        "a guard rail of the namespace, deployed with its workloads: the namespace's users would need rights to "
        "change it (and could relax their Pod Security level or raise their own quota), and `kubectl delete -k` "
        "would delete it with them; put it in the kustomization a cluster admin applies (k8s/namespace)"))
        for o in objects if o.get("kind") in GUARD_RAIL_KINDS]
