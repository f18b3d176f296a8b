"""Service accounts: every pod names an account of its own that the kustomizations deployed together make, never the
namespace's ``default`` (CIS Kubernetes Benchmark 5.1.5). A Ray head names none: KubeRay makes the head's account,
with the Role its autoscaler needs, when the head's template leaves it out."""

from __future__ import annotations

from typing import Any

from tools.k8s_check.objects import Problem, get_path, object_id, pod_specs


def check_service_accounts(objects: list[dict[str, Any]]) -> list[Problem]:
    """Pods on the ``default`` account, on an account nobody makes, or (a Ray head) on one KubeRay does not make."""
    made = {(get_path(o, "metadata", "namespace"), get_path(o, "metadata", "name"))
            for o in objects if o.get("kind") == "ServiceAccount"}
    found = []
    for obj in objects:
        namespace = get_path(obj, "metadata", "namespace")
        for pod in pod_specs(obj):
            name = pod.spec.get("serviceAccountName") or pod.spec.get("serviceAccount")
            if "headGroupSpec" in pod.where:
                message = f"{pod.where}: serviceAccountName {name}: leave it out, so that KubeRay makes the " \
                          "head's account with its autoscaler's Role" if name else None
            elif name in (None, "default"):
                message = f"{pod.where}: runs on the namespace's default service account: name one of its own"
            else:
                message = None if (namespace, name) in made else \
                    f"{pod.where}: serviceAccountName {name}: no such ServiceAccount is deployed with it"
            if message:
                found.append(Problem(object_id(obj), "policy", message))
    return found
