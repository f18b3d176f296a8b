"""The GCS Redis itself, the pods behind the Service a Ray cluster's ``redisAddress`` names
(:mod:`~tools.k8s_check.gcs_ft` finds them):

- each container requests as much memory and CPU as its limit (Guaranteed QoS). Under memory pressure the kubelet
  evicts pods that use more than they request first, whatever their priority, and every Ray head depends on Redis;
- the Redis container sets ``requirepass $VAR`` in the configuration it reads (a line of its script, not an
  argument, and not in a quoted here-document, which would not expand it), where ``VAR`` comes from the Secret and
  key the cluster gives as ``redisPassword``: without it Redis asks no password, and with another one no head can
  start;
- no Secret reaches a command line: no ``$(VAR)`` of a Secret's variable in ``command`` or ``args`` (Kubernetes
  expands it into the process's arguments, which every process of the node may read) and no ``--requirepass``.
"""

from __future__ import annotations

import re
from typing import Any

from tools.k8s_check.objects import PodSpec, Problem, containers, cpu_quantity, get_path, object_id, quantity

_KINDS = (("memory", quantity), ("cpu", cpu_quantity))


def _qos_problems(pod: PodSpec) -> list[str]:
    found = []
    for where, container in containers(pod):
        limits = get_path(container, "resources", "limits") or {}
        requests = get_path(container, "resources", "requests") or {}
        for kind, parse in _KINDS:
            limit = limits.get(kind)
            request = requests.get(kind, limit)  # an unset request defaults to the limit
            if limit is None or request is None or parse(request) < parse(limit):
                found.append(f"{where}: {kind} request {request} is below its limit {limit}: request the limit "
                             "(Guaranteed QoS), or the kubelet evicts the GCS Redis first under memory pressure, "
                             "whatever its priority, and every Ray head may restart")
    return found


def _secret_variables(container: dict[str, Any], ref: dict[str, Any] | None = None) -> set[str]:
    """The container's variables from a Secret (from ``ref``'s name and key, when given)."""
    found = set()
    for env in container.get("env") or []:
        source = get_path(env, "valueFrom", "secretKeyRef") or {}
        if source and (ref is None or (source.get("name"), source.get("key")) == (ref.get("name"), ref.get("key"))):
            found.add(env.get("name"))
    return found


def _password_problems(pod: PodSpec, ref: dict[str, Any]) -> list[str]:
    found = []
    for where, container in containers(pod):
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        expanded = sorted(v for v in _secret_variables(container) if any(f"$({v})" in w for w in words))
        if expanded:
            found.append(f"{where}: $({expanded[0]}) puts a Secret on the command line, which every process of the "
                         "node may read: give it in the configuration Redis reads from standard input")
        if any("--requirepass" in w for w in words):
            found.append(f"{where}: --requirepass puts the password on redis-server's command line: give "
                         "`requirepass $VAR` in the configuration it reads from standard input")
    names = {v for _, c in containers(pod) for v in _secret_variables(c, ref)}
    script = "\n".join(str(w) for _, c in containers(pod) for w in (c.get("command") or []) + (c.get("args") or []))
    if re.search(r"<<-?\s*['\"\\]", script):
        found.append(f"{pod.where}: a quoted here-document (<<'EOF') hands `requirepass $VAR` to Redis unexpanded: "
                     "leave its delimiter unquoted")
    elif not any(re.search(rf'^\s*requirepass\s+"?\$\{{?{re.escape(n)}\}}?"?\s*$', script, re.MULTILINE)
                 for n in names):
        found.append(f"{pod.where}: no `requirepass $VAR` line with VAR from Secret '{ref.get('name')}' key "
                     f"'{ref.get('key')}', the clusters' redisPassword: Redis would ask no password, or another one")
    return found


def check_redis_server(redis: list[tuple[dict[str, Any], PodSpec]], options: dict[str, Any]) -> list[Problem]:
    """The QoS and the password of the Redis pods a cluster's ``redisAddress`` reaches (see the module)."""
    ref = get_path(options, "redisPassword", "valueFrom", "secretKeyRef")
    found = []
    for obj, pod in redis:
        messages = _qos_problems(pod) + (_password_problems(pod, ref) if ref else [])
        found += [Problem(object_id(obj), "gcs-ft", m) for m in messages]
    return found
