"""What a namespace's kustomization may own: no cluster-scoped object but its own Namespace (SRE review 16, finding 9).

A cluster-scoped object (a PriorityClass, a ClusterRole, a StorageClass, ...) applied with a team's overlay is owned
by that overlay: a ``kubectl delete -k`` of it deletes the object for every namespace that uses it (two teams on
gpu-spot shared ``sentsweep-spot``), and a namespace admin without cluster RBAC cannot apply the overlay at all.
Such objects belong in ``k8s/cluster``, which a cluster admin applies once and the overlays name but do not own.
The Namespace the objects live in is the exception: it is the team's own (the team example renames it), and
deleting it with the overlay is what tearing the team down means.

So when the objects include namespaced ones, every object of a kind in :data:`CLUSTER_SCOPED_KINDS` is refused,
but a Namespace that one of the namespaced objects lives in. A kustomization of cluster-scoped objects only
(``k8s/cluster``) passes.
"""

from __future__ import annotations

from typing import Any

from tools.k8s_check.objects import Problem, get_path, object_id

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
