"""Service accounts: every pod names an account of its own that the kustomizations deployed together make, never the
namespace's ``default`` (CIS Kubernetes Benchmark 5.1.5). A Ray head names none: KubeRay makes the head's account,
with the Role its autoscaler needs, when the head's template leaves it out.

An account is one workload's: two workloads on one account (the GCS Redis on PostgreSQL's) cannot be told apart by
an audit log or an admission policy, and a RoleBinding made for one grants the other too. The Ray clusters' pods of
one role share one: every worker group (``ray-worker``) and every RayJob's submitter (``sweep-submitter``). Every
ServiceAccount deployed sets ``automountServiceAccountToken: false``, so a pod added later without the setting gets
no token either."""

from __future__ import annotations

from typing import Any

from tools.k8s_check.objects import PodSpec, Problem, get_path, object_id, pod_specs, ray_cluster_spec


def _workload(obj: dict[str, Any], pod: PodSpec) -> str:
    """Who a pod spec's account belongs to: its object, or (Ray clusters' pods) its role across every cluster."""
    if ray_cluster_spec(obj) is None:
        return object_id(obj)
    return "the Ray worker groups" if pod.group is not None else "the RayJob submitters"


def check_service_accounts(objects: list[dict[str, Any]]) -> list[Problem]:
    """Pods on the ``default`` account, on an account nobody makes, on another workload's, or (a Ray head) on one
    KubeRay does not make; accounts that automount a token."""
    made = {(get_path(o, "metadata", "namespace"), get_path(o, "metadata", "name"))
            for o in objects if o.get("kind") == "ServiceAccount"}
    found = [Problem(object_id(o), "policy", "automountServiceAccountToken is not false: a pod that does not turn it "
                     "off gets a token it does not need") for o in objects
             if o.get("kind") == "ServiceAccount" and o.get("automountServiceAccountToken") is not False]
    holders: dict[tuple[Any, Any], list[str]] = {}
    for obj in objects:
        namespace = get_path(obj, "metadata", "namespace")
        for pod in pod_specs(obj):
            name = pod.spec.get("serviceAccountName") or pod.spec.get("serviceAccount")
            workload = _workload(obj, pod)
            first = holders.setdefault((namespace, name), [workload])[0]
            if "headGroupSpec" in pod.where:
                message = f"{pod.where}: serviceAccountName {name}: leave it out, so that KubeRay makes the " \
                          "head's account with its autoscaler's Role" if name else None
            elif name in (None, "default"):
                message = f"{pod.where}: runs on the namespace's default service account: name one of its own"
            elif (namespace, name) not in made:
                message = f"{pod.where}: serviceAccountName {name}: no such ServiceAccount is deployed with it"
            elif first != workload:
                message = f"{pod.where}: serviceAccountName {name} is also {first}'s: give each workload an account " \
                          "of its own"
            else:
                message = None
            if message:
                found.append(Problem(object_id(obj), "policy", message))
    return found
