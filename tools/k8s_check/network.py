"""Network checks of rendered objects.

- Services and NetworkPolicy peers select pods that exist;
- every pod that listens (a container declares a port, or it is a Ray head or worker: Ray opens GCS,
  raylet, object-store and worker ports whether declared or not) is selected by an ingress NetworkPolicy
  of its namespace that names it (a non-empty ``podSelector``): the policy that says who may reach it;
- a namespace with listening pods has a default-deny ingress policy (``podSelector: {}``, no rules), so a
  pod added later without a policy of its own is closed, not open.

Selectors are compared on ``matchLabels`` against the labels of the pod templates (KubeRay adds its own
``ray.io/*`` labels to the pods it creates; the manifests' policies use the templates' labels).
"""

from __future__ import annotations

from typing import Any

from tools.k8s_check.objects import PodSpec, Problem, containers, get_path, object_id, pod_specs


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _namespace(obj: dict[str, Any]) -> str | None:
    return get_path(obj, "metadata", "namespace")


def listens(pod: PodSpec) -> bool:
    """Whether pods of this spec accept connections: declared container ports, or a Ray node."""
    return pod.group is not None or any(c.get("ports") for _, c in containers(pod))


def is_ingress_policy(policy: dict[str, Any]) -> bool:
    types = get_path(policy, "spec", "policyTypes")
    return "Ingress" in types if types else True  # no policyTypes: Ingress is implied


def is_default_deny(policy: dict[str, Any]) -> bool:
    """An ingress policy that selects every pod of its namespace and lets nothing in."""
    selector = get_path(policy, "spec", "podSelector") or {}
    return is_ingress_policy(policy) and not selector.get("matchLabels") and not selector.get(
        "matchExpressions") and not get_path(policy, "spec", "ingress")


def check_network(everything: list[dict[str, Any]]) -> list[Problem]:
    """Selectors that match, listening pods behind a policy of their own, default deny per namespace."""
    pods = [(obj, pod) for obj in everything for pod in pod_specs(obj)]
    policies = [o for o in everything if o.get("kind") == "NetworkPolicy"]
    found: list[Problem] = []
    for obj in everything:
        selector = get_path(obj, "spec", "selector") if obj.get("kind") == "Service" else None
        if selector and not any(_selects(selector, pod.labels) for _, pod in pods):
            found.append(Problem(object_id(obj), "network", "the selector matches no pod template"))
    listening_namespaces: set[str | None] = set()
    for obj, pod in pods:
        if not listens(pod):
            continue
        listening_namespaces.add(_namespace(obj))
        if not any(_namespace(p) == _namespace(obj) and is_ingress_policy(p)
                   and _selects(get_path(p, "spec", "podSelector", "matchLabels") or {}, pod.labels)
                   for p in policies):
            found.append(Problem(object_id(obj), "network",
                                 f"{pod.where}: its pods listen but no ingress NetworkPolicy selects them"))
    for namespace in sorted(listening_namespaces, key=str):
        if not any(_namespace(p) == namespace and is_default_deny(p) for p in policies):
            found.append(Problem(f"Namespace/{namespace}", "network",
                                 "no default-deny ingress NetworkPolicy (podSelector: {}, no ingress rules)"))
    for policy in policies:
        pod_selector = get_path(policy, "spec", "podSelector", "matchLabels") or {}
        if pod_selector and not any(_selects(pod_selector, pod.labels) for _, pod in pods):
            found.append(Problem(object_id(policy), "network", "the podSelector matches no pod template"))
        for i, rule in enumerate(get_path(policy, "spec", "ingress") or []):
            for peer in rule.get("from") or []:
                selector = get_path(peer, "podSelector", "matchLabels") or {}
                if selector and "namespaceSelector" not in peer \
                        and not any(_selects(selector, pod.labels) for _, pod in pods):
                    found.append(Problem(object_id(policy), "network",
                                         f"spec.ingress[{i}]: no pod template carries {selector}"))
    return found
