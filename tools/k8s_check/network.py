"""Network checks of rendered objects.

- Services and NetworkPolicy peers (ingress ``from``, egress ``to``) select pods that exist;
- every pod that listens (a container declares a port, or it is a Ray head or worker: Ray opens GCS,
  raylet, object-store and worker ports whether declared or not) is selected by an ingress NetworkPolicy
  of its namespace that names it (a non-empty ``podSelector``): the policy that says who may reach it; and
  a container that declares ports has a readinessProbe (KubeRay gives the Ray containers theirs);
- a namespace with listening pods has a default-deny ingress policy (``podSelector: {}``, no rules), so a
  pod added later without a policy of its own is closed, not open;
- a namespace with pods has a default-deny egress policy (trials run arbitrary code holding credentials:
  nothing leaves unless a policy lets it), and a policy that lets all its pods reach DNS (port 53);
- no ``ipBlock`` lets traffic reach the cloud metadata endpoint 169.254.169.254 (the node's credentials):
  a block that contains it lists it in ``except``;
- no egress ``ipBlock`` reaches a public address (beyond the private ranges) unless its policy carries the label
  ``sentsweep/internet-egress: opt-in`` (k8s/components/hf-hub-egress): every Ray pod holds the tracking and
  bucket keys, and a policy applies to every container of the pods it selects; and an opted-in block that
  reaches the internet excepts the private and shared ranges (:data:`INTERNAL_RANGES`: other tenants' pods, the
  API server, ingress controllers, cloud private endpoints), which no policy opens wholesale.

Selectors are compared on ``matchLabels`` (a policy's own ``podSelector``: with its ``matchExpressions`` too, by
:func:`label_selector_matches`) against the labels of the pod templates (KubeRay adds its own
``ray.io/*`` labels to the pods it creates; the manifests' policies use the templates' labels).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from tools.k8s_check.objects import PodSpec, Problem, containers, get_path, object_id, pod_specs


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Whether a non-empty ``matchLabels`` selector matches ``labels``."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _namespace(obj: dict[str, Any]) -> str | None:
    return get_path(obj, "metadata", "namespace")


def listens(pod: PodSpec) -> bool:
    """Whether pods of this spec accept connections: declared container ports, or a Ray node."""
    return pod.group is not None or any(c.get("ports") for _, c in containers(pod))


#: The cloud metadata endpoint (AWS, GCP, Azure, ...): it hands out the node's credentials.
METADATA_ADDRESS = ipaddress.ip_address("169.254.169.254")
DNS_PORT = 53


def has_type(policy: dict[str, Any], direction: str) -> bool:
    """Whether ``policy`` restricts ``direction`` (``Ingress`` or ``Egress``)."""
    types = get_path(policy, "spec", "policyTypes")
    if types:
        return direction in types
    # no policyTypes: Ingress is implied, Egress only where the policy has egress rules
    return direction == "Ingress" or bool(get_path(policy, "spec", "egress"))


def is_ingress_policy(policy: dict[str, Any]) -> bool:
    return has_type(policy, "Ingress")


def _selects_all(policy: dict[str, Any]) -> bool:
    selector = get_path(policy, "spec", "podSelector") or {}
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def _expression_matches(expression: dict[str, Any], labels: dict[str, str]) -> bool:
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    return operator == "DoesNotExist" and key not in labels  # an unknown operator: the schema check reports it


def label_selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a LabelSelector (``matchLabels`` and ``matchExpressions``) matches ``labels``; an empty one matches
    every set of labels."""
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()) and all(
        _expression_matches(e, labels) for e in selector.get("matchExpressions") or [])


def applies_to(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether ``policy`` selects pods with ``labels`` (an empty ``podSelector`` selects every pod)."""
    return label_selector_matches(get_path(policy, "spec", "podSelector") or {}, labels)


def is_default_deny(policy: dict[str, Any], direction: str = "Ingress") -> bool:
    """A policy of ``direction`` that selects every pod of its namespace and lets nothing through."""
    return has_type(policy, direction) and _selects_all(policy) and not get_path(policy, "spec", direction.lower())


def allows_dns(policy: dict[str, Any]) -> bool:
    """An egress policy that lets every pod of its namespace out on UDP port 53 (to any peer it names)."""
    if not (has_type(policy, "Egress") and _selects_all(policy)):
        return False
    return any(not rule.get("ports") or any(port.get("port") == DNS_PORT and port.get("protocol", "TCP") == "UDP"
                                            for port in rule["ports"])
               for rule in get_path(policy, "spec", "egress") or [])


def _contains_metadata(cidr: Any) -> bool:
    try:
        return METADATA_ADDRESS in ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:  # not a CIDR (the schema check reports it), or IPv6
        return False


def _metadata_problems(policy: dict[str, Any]) -> list[str]:
    found = []
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(get_path(policy, "spec", direction) or []):
            for peer in rule.get(peers) or []:
                block = peer.get("ipBlock")
                if block and _contains_metadata(block.get("cidr")) and not any(
                        _contains_metadata(e) for e in block.get("except") or []):
                    found.append(f"spec.{direction}[{i}]: ipBlock {block['cidr']} includes the cloud metadata "
                                 f"endpoint {METADATA_ADDRESS}: list {METADATA_ADDRESS}/32 in its except")
    return found


#: The label by which a NetworkPolicy opts in to egress to public addresses.
INTERNET_OPT_IN = ("sentsweep/internet-egress", "opt-in")


#: The private (RFC 1918, IPv6 unique-local), shared (RFC 6598) and IPv6 link-local ranges an opted-in internet
#: egress must except.
INTERNAL_RANGES = tuple(ipaddress.ip_network(r) for r in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "fe80::/10"))


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:  # not a CIDR: the schema check reports it
        return None


def _public_egress_problems(policy: dict[str, Any]) -> list[str]:
    opted_in = get_path(policy, "metadata", "labels", INTERNET_OPT_IN[0]) == INTERNET_OPT_IN[1]
    found = []
    for i, rule in enumerate(get_path(policy, "spec", "egress") or []):
        for peer in rule.get("to") or []:
            block = peer.get("ipBlock") or {}
            network = _network(block.get("cidr"))
            if network is None or network.is_private:
                continue
            if not opted_in:
                found.append(f"spec.egress[{i}]: ipBlock {block['cidr']} reaches public addresses (the internet): "
                             f"narrow it to private ranges or the hosts needed, or label the policy "
                             f"{INTERNET_OPT_IN[0]}: {INTERNET_OPT_IN[1]}")
                continue
            excepted = [n for n in map(_network, block.get("except") or []) if n is not None]
            open_ranges = [str(r) for r in INTERNAL_RANGES if r.version == network.version and r.overlaps(network)
                           and not any(r.subnet_of(e) for e in excepted if e.version == r.version)]
            if open_ranges:
                found.append(f"spec.egress[{i}]: ipBlock {block['cidr']} opens the internal ranges "
                             f"{', '.join(open_ranges)} too: list them in its except (internet egress is the "
                             "internet only)")
    return found


def check_network(everything: list[dict[str, Any]]) -> list[Problem]:
    """Selectors that match, listening pods behind a policy of their own, default deny (ingress and
    egress) and DNS per namespace, no ipBlock open to the metadata endpoint."""
    pods = [(obj, pod) for obj in everything for pod in pod_specs(obj)]
    policies = [o for o in everything if o.get("kind") == "NetworkPolicy"]
    found: list[Problem] = []
    for obj in everything:
        selector = get_path(obj, "spec", "selector") if obj.get("kind") == "Service" else None
        if selector and not any(selects(selector, pod.labels) for _, pod in pods):
            found.append(Problem(object_id(obj), "network", "the selector matches no pod template"))
    listening_namespaces: set[str | None] = set()
    for obj, pod in pods:
        if not listens(pod):
            continue
        listening_namespaces.add(_namespace(obj))
        if not any(_namespace(p) == _namespace(obj) and is_ingress_policy(p)
                   and selects(get_path(p, "spec", "podSelector", "matchLabels") or {}, pod.labels)
                   for p in policies):
            found.append(Problem(object_id(obj), "network",
                                 f"{pod.where}: its pods listen but no ingress NetworkPolicy selects them"))
        found += [Problem(object_id(obj), "network", f"{where}: declares ports but has no readinessProbe (a "
                          "Service would route to it before it answers)") for where, c in containers(pod)
                  if pod.group is None and c.get("ports") and "readinessProbe" not in c]
    for namespace in sorted(listening_namespaces, key=str):
        if not any(_namespace(p) == namespace and is_default_deny(p) for p in policies):
            found.append(Problem(f"Namespace/{namespace}", "network",
                                 "no default-deny ingress NetworkPolicy (podSelector: {}, no ingress rules)"))
    for namespace in sorted({_namespace(obj) for obj, _ in pods}, key=str):
        ours = [p for p in policies if _namespace(p) == namespace]
        if not any(is_default_deny(p, "Egress") for p in ours):
            found.append(Problem(f"Namespace/{namespace}", "network", "no default-deny egress NetworkPolicy "
                                 "(podSelector: {}, policyTypes: [Egress], no egress rules)"))
        elif not any(allows_dns(p) for p in ours):
            found.append(Problem(f"Namespace/{namespace}", "network", "egress is denied but no NetworkPolicy "
                                 "lets every pod reach DNS (podSelector: {}, egress on UDP port 53)"))
    for policy in policies:
        pod_selector = get_path(policy, "spec", "podSelector", "matchLabels") or {}
        if pod_selector and not any(selects(pod_selector, pod.labels) for _, pod in pods):
            found.append(Problem(object_id(policy), "network", "the podSelector matches no pod template"))
        for direction, peers in (("ingress", "from"), ("egress", "to")):
            for i, rule in enumerate(get_path(policy, "spec", direction) or []):
                for peer in rule.get(peers) or []:
                    selector = get_path(peer, "podSelector", "matchLabels") or {}
                    if selector and "namespaceSelector" not in peer \
                            and not any(selects(selector, pod.labels) for _, pod in pods):
                        found.append(Problem(object_id(policy), "network",
                                             f"spec.{direction}[{i}]: no pod template carries {selector}"))
        found += [Problem(object_id(policy), "network", m)
                  for m in _metadata_problems(policy) + _public_egress_problems(policy)]
    return found
