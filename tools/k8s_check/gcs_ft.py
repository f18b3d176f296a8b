"""GCS fault tolerance: every Ray cluster keeps its GCS state (nodes, actors, placement groups, jobs) in Redis, so a
head that restarts finds it again, and the workers and the running jobs carry on. Without it a new head treats the
workers as unknown and they restart, with every trial on them.

- a RayCluster, and a RayJob's cluster, sets ``gcsFaultToleranceOptions`` (KubeRay 1.3 and later) with the Redis
  backend (the embedded RocksDB one is alpha), a ``redisAddress``, a ``redisUsername`` (the GCS's own ACL user in
  Redis: without one it logs in as Redis's default user, which may run every command) and a ``redisPassword`` from a
  Secret (``valueFrom``; :func:`~tools.k8s_check.policy.check_references` resolves both); not the older annotation
  ``ray.io/ft-enabled``, with which the password sits in ``rayStartParams`` or the head's env;
- nothing KubeRay refuses beside the options: ``redis-password`` in the head's ``rayStartParams``,
  ``RAY_REDIS_ADDRESS`` or ``REDIS_PASSWORD`` in the head's Ray container, the annotations ``ray.io/ft-enabled`` and
  ``ray.io/external-storage-namespace`` (KubeRay reconciles no pod of such a cluster);
- no ``externalStorageNamespace`` (the cluster's key prefix in Redis) in a RayJob, whose every cluster (each retry,
  each sweep of a nameSuffix) would share it, nor one shared by two RayClusters: deleting either cluster deletes the
  other's GCS state with its own. KubeRay's default, the RayCluster's UID, is one prefix per cluster;
- no IP address as ``redisAddress`` (the check could not follow it to a Service, and it changes when the Service is
  recreated);
- an address in the cluster (a bare name, ``NAME.NAMESPACE`` or ``NAME.NAMESPACE.svc[...]``) names a Service deployed
  with it and one of its ports; only Ray heads may reach the Redis behind it: every ingress NetworkPolicy that selects
  its pods (by ``matchLabels`` and ``matchExpressions``) admits, in every rule, only pod templates of Ray heads (a peer
  by ``podSelector`` labels alone: no ``ipBlock``, no ``namespaceSelector``, no rule open to all), on any port range
  (``endPort``) that holds the Redis port, and every head that uses it is let in (ingress) and out (egress) on the
  Redis port. KubeRay's Redis cleanup Job, made from the head's template when a cluster is deleted, carries the head's
  labels, so it is let through too. The Redis pods themselves: :mod:`~tools.k8s_check.gcs_redis`. An address outside
  the cluster (a managed Redis) is not checked further.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from tools.k8s_check.gcs_redis import check_redis_server
from tools.k8s_check.network import applies_to, has_type, label_selector_matches, selects
from tools.k8s_check.objects import PodSpec, Problem, get_path, object_id, pod_specs, ray_cluster_spec

FT_ANNOTATION = "ray.io/ft-enabled"
STORAGE_NS_ANNOTATION = "ray.io/external-storage-namespace"
#: What KubeRay refuses in the head's Ray container when ``gcsFaultToleranceOptions`` is set.
HEAD_ENV = ("RAY_REDIS_ADDRESS", "REDIS_PASSWORD")
REDIS_PORT = 6379

Cluster = tuple[dict[str, Any], str, dict[str, Any]]  # the object, the path to its cluster spec, the spec


def _clusters(objects: list[dict[str, Any]]) -> Iterator[Cluster]:
    for obj in objects:
        spec = ray_cluster_spec(obj)
        if spec is not None:
            yield obj, "spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec", spec


def check_gcs_fault_tolerance(objects: list[dict[str, Any]]) -> list[Problem]:
    """Every Ray cluster's GCS fault tolerance, and who may reach its Redis (see the module)."""
    found: list[Problem] = []
    prefixes: dict[str, list[str]] = {}
    for obj, prefix, spec in _clusters(objects):
        oid = object_id(obj)
        options = spec.get("gcsFaultToleranceOptions")
        annotations = get_path(obj, "metadata", "annotations") or {}
        messages = [f"metadata.annotations: {key} is refused with gcsFaultToleranceOptions (KubeRay would reconcile "
                    "no pod of the cluster)" for key in (FT_ANNOTATION, STORAGE_NS_ANNOTATION)
                    if key in annotations and options is not None]
        if options is None:
            messages.append(f"{prefix}: no GCS fault tolerance: set gcsFaultToleranceOptions (redisAddress, "
                            "redisPassword from a Secret), or a head restart loses the cluster's state and restarts "
                            "every worker with its trials")
        else:
            messages += [f"{prefix}.gcsFaultToleranceOptions{m}" for m in _option_problems(options)]
            messages += [f"{prefix}.headGroupSpec: {m}" for m in _head_problems(spec)]
            namespace = options.get("externalStorageNamespace")
            if namespace and obj["kind"] == "RayJob":
                messages.append(f"{prefix}.gcsFaultToleranceOptions.externalStorageNamespace: every cluster of this "
                                "RayJob (each retry, each sweep of a nameSuffix) would share the key prefix, and "
                                "deleting one deletes the others' GCS state: leave it out (the cluster's UID)")
            elif namespace:
                prefixes.setdefault(str(namespace), []).append(oid)
            found += _reach_problems(obj, prefix, options, objects)
        found += [Problem(oid, "gcs-ft", m) for m in messages]
    found += [Problem(owners[1], "gcs-ft", f"gcsFaultToleranceOptions.externalStorageNamespace {name!r} is also "
                      f"{owners[0]}'s: deleting either cluster deletes the other's GCS state")
              for name, owners in prefixes.items() if len(owners) > 1]
    return list(dict.fromkeys(found))  # a Redis that several clusters use: its policies' problems once


def _option_problems(options: dict[str, Any]) -> list[str]:
    found = []
    if options.get("backend", "redis") != "redis":
        found.append(f".backend: {options['backend']} is alpha in KubeRay: keep the GCS in Redis")
        return found
    if not options.get("redisAddress"):
        found.append(": no redisAddress (the Redis that keeps the GCS state, gcs-redis:6379)")
    if not options.get("redisUsername"):
        found.append(": no redisUsername: the GCS logs in as Redis's default user, which may run every command: give "
                     "it the Redis's GCS user (valueFrom.secretKeyRef, gcs-redis.yaml)")
    password = options.get("redisPassword")
    if not password:
        found.append(": no redisPassword: give the Redis password from a Secret (valueFrom.secretKeyRef)")
    elif "value" in password:
        found.append(".redisPassword: a plaintext value (use valueFrom.secretKeyRef)")
    return found


def _head_problems(spec: dict[str, Any]) -> list[str]:
    head = spec.get("headGroupSpec") or {}
    found = []
    if "redis-password" in (head.get("rayStartParams") or {}):
        found.append("rayStartParams.redis-password is refused with gcsFaultToleranceOptions: give redisPassword")
    container = get_path(head, "template", "spec", "containers", 0) or {}
    names = {e.get("name") for e in container.get("env") or []}
    found += [f"template.spec.containers[{container.get('name')}]: env {name} is refused with "
              "gcsFaultToleranceOptions (KubeRay sets it from the options)" for name in HEAD_ENV if name in names]
    return found


def _parse_address(address: str) -> tuple[str, int]:
    """The host and port of a Redis address (``gcs-redis:6379``, ``redis://h:p``, the first of a list)."""
    first = address.split(",")[0].strip()
    host_port = first.split("://", 1)[-1].rsplit("@", 1)[-1]
    host, _, port = host_port.rpartition(":") if ":" in host_port else (host_port, "", "")
    return host.strip("[]"), int(port) if port.isdigit() else REDIS_PORT


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _service(host: str, namespace: Any, objects: list[dict[str, Any]]) -> tuple[str, Any, dict[str, Any] | None]:
    """The Service name and namespace ``host`` names in the cluster, and the Service (None when not deployed)."""
    parts = host.split(".")
    name, where = parts[0], parts[1] if _in_cluster(host) and len(parts) > 1 else namespace
    service = next((o for o in objects if o.get("kind") == "Service" and get_path(o, "metadata", "name") == name
                    and get_path(o, "metadata", "namespace") == where), None)
    return name, where, service


def _in_cluster(host: str) -> bool:
    """Whether ``host`` names a Service: ``NAME`` (the cluster's namespace), ``NAME.NAMESPACE`` (the pods' DNS search
    path finds it) or ``NAME.NAMESPACE.svc[...]``."""
    parts = host.split(".")
    return not _is_ip(host) and (len(parts) <= 2 or parts[2] == "svc")


def _reach_problems(obj: dict[str, Any], prefix: str, options: dict[str, Any],
                    objects: list[dict[str, Any]]) -> list[Problem]:
    """The Service of the address, and who may reach the pods behind it."""
    oid, where = object_id(obj), f"{prefix}.gcsFaultToleranceOptions.redisAddress"
    address = str(options.get("redisAddress") or "")
    host, port = _parse_address(address)
    if address and _is_ip(host):
        return [Problem(oid, "gcs-ft", f"{where}: {address}: an IP address, which the check cannot follow to a Service "
                        "and which changes when the Service is recreated: name the Service (gcs-redis:6379)")]
    if not address or not _in_cluster(host):
        return []
    name, namespace, service = _service(host, get_path(obj, "metadata", "namespace"), objects)
    if service is None:
        return [Problem(oid, "gcs-ft", f"{where}: {address}: no Service '{name}' is deployed with it")]
    entry = next((p for p in get_path(service, "spec", "ports") or [] if p.get("port") == port), None)
    if entry is None:
        return [Problem(oid, "gcs-ft", f"{where}: {address}: Service '{name}' has no port {port}")]
    selector = get_path(service, "spec", "selector") or {}
    redis = [(o, pod) for o in objects if get_path(o, "metadata", "namespace") == namespace
             for pod in pod_specs(o) if selects(selector, pod.labels)]
    target = entry.get("targetPort", port)
    numbers = {target} | {p.get("containerPort") for _, pod in redis for c in pod.spec.get("containers") or []
                          for p in c.get("ports") or [] if p.get("name") == target}
    found = [Problem(oid, "gcs-ft", m) for m in _heads_reach(obj, where, redis, numbers, objects)]
    return found + _others_kept_out(redis, numbers, objects) + check_redis_server(redis, options)


def _is_head(pod: PodSpec) -> bool:
    return pod.group is not None and pod.where.endswith("headGroupSpec.template.spec")


def _port_matches(entry: dict[str, Any], numbers: set[Any]) -> bool:
    """Whether a rule's ``ports`` entry holds one of the (TCP) ports: every port, the number or name, a range."""
    port, end = entry.get("port"), entry.get("endPort")
    if entry.get("protocol", "TCP") != "TCP":
        return False
    if port is None or port in numbers:
        return True
    return isinstance(port, int) and isinstance(end, int) and any(
        isinstance(n, int) and port <= n <= end for n in numbers)


def _ports_match(rule: dict[str, Any], numbers: set[Any]) -> bool:
    return not rule.get("ports") or any(_port_matches(p, numbers) for p in rule["ports"])


def _policies(objects: list[dict[str, Any]], namespace: Any, direction: str) -> list[dict[str, Any]]:
    return [p for p in objects if p.get("kind") == "NetworkPolicy" and has_type(p, direction)
            and get_path(p, "metadata", "namespace") == namespace]


def _peer_selects(peer: dict[str, Any], namespace: Any, labels: dict[str, str]) -> bool:
    """Whether a peer selects pods with ``labels`` in ``namespace`` (an empty ``podSelector``: all of them)."""
    if "ipBlock" in peer:
        return False
    spaces = peer.get("namespaceSelector")
    if spaces is not None and not label_selector_matches(spaces, {"kubernetes.io/metadata.name": str(namespace)}):
        return False
    return label_selector_matches(peer.get("podSelector") or {}, labels)


def _lets_through(objects: list[dict[str, Any]], namespace: Any, direction: str, selected: dict[str, str],
                  peer: dict[str, str], numbers: set[Any]) -> bool:
    """Whether a policy of ``direction`` that selects ``selected`` lets ``peer`` through on one of the ports."""
    key = "from" if direction == "Ingress" else "to"
    return any(_ports_match(rule, numbers)
               and (not rule.get(key) or any(_peer_selects(p, namespace, peer) for p in rule[key]))
               for policy in _policies(objects, namespace, direction) if applies_to(policy, selected)
               for rule in get_path(policy, "spec", direction.lower()) or [])


def _heads_reach(obj: dict[str, Any], where: str, redis: list[tuple[dict[str, Any], PodSpec]], numbers: set[Any],
                 objects: list[dict[str, Any]]) -> list[str]:
    """Whether the cluster's head is let out to the Redis pods and let in by their ingress policies."""
    head = next((pod for pod in pod_specs(obj) if _is_head(pod)), None)
    if head is None or not redis:  # a Service that selects no pod: check_network reports it
        return []
    namespace, redis_labels = get_path(obj, "metadata", "namespace"), redis[0][1].labels
    found = []
    if not _lets_through(objects, namespace, "Ingress", redis_labels, head.labels, numbers):
        found.append(f"{where}: no ingress NetworkPolicy of the Redis pods lets the head ({head.where}) in")
    if not _lets_through(objects, namespace, "Egress", head.labels, redis_labels, numbers):
        found.append(f"{where}: no egress NetworkPolicy lets the head ({head.where}) out to the Redis pods")
    return found


def _others_kept_out(redis: list[tuple[dict[str, Any], PodSpec]], numbers: set[Any],
                     objects: list[dict[str, Any]]) -> list[Problem]:
    """Ingress rules of the Redis pods that admit anything but Ray heads."""
    if not redis:
        return []
    namespace = get_path(redis[0][0], "metadata", "namespace")
    pods = [(o, pod) for o in objects if get_path(o, "metadata", "namespace") == namespace for pod in pod_specs(o)]
    found = []
    for policy in _policies(objects, namespace, "Ingress"):
        if not applies_to(policy, redis[0][1].labels):
            continue
        for i, rule in enumerate(get_path(policy, "spec", "ingress") or []):
            why = _rule_admits(rule, pods) if _ports_match(rule, numbers) else None
            if why:
                found.append(Problem(object_id(policy), "gcs-ft", f"spec.ingress[{i}]: admits {why} to the GCS Redis "
                                     f"({object_id(redis[0][0])}): only Ray heads may reach it (a worker runs trial "
                                     "code)"))
    return found


def _rule_admits(rule: dict[str, Any], pods: list[tuple[dict[str, Any], PodSpec]]) -> str | None:
    """What other than Ray heads an ingress rule admits (None: heads only)."""
    if not rule.get("from"):
        return "every source"
    for peer in rule["from"]:
        if "ipBlock" in peer:
            return f"ipBlock {get_path(peer, 'ipBlock', 'cidr')}"
        if "namespaceSelector" in peer:
            return "pods of other namespaces (namespaceSelector)"
        selector = peer.get("podSelector") or {}
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            return "every pod of the namespace (an empty podSelector)"
        others = [f"{object_id(o)} {pod.where}" for o, pod in pods if label_selector_matches(selector, pod.labels)
                  and not _is_head(pod)]
        if others:
            return ", ".join(others)
    return None
