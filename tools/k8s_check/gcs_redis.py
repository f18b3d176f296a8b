"""The GCS Redis itself, the pods behind the Service a Ray cluster's ``redisAddress`` names
(:mod:`~tools.k8s_check.gcs_ft` finds them):

- each container requests as much memory and CPU as its limit (Guaranteed QoS). Under memory pressure the kubelet
  evicts pods that use more than they request first, whatever their priority, and every Ray head depends on Redis;
- the configuration Redis reads (a here-document of its script, not arguments, and not a quoted one, which would
  not expand its variables) turns the ``default`` user off (``user default off``): otherwise any client that
  reaches Redis logs in with every command, with ``requirepass``'s password or none;
- it has a ``user`` line for the clusters' ``redisUsername`` (``user $VAR``, ``VAR`` from the same Secret and key, or
  the same literal name), ``on``, whose password is ``>$VAR`` with ``VAR`` from the Secret and key the cluster gives
  as ``redisPassword``: otherwise no head can log in;
- that GCS user is limited: no ``allcommands``, ``+@all``, ``allkeys``, ``~*`` or ``nopass``, no category but the
  data types' :data:`SAFE_CATEGORIES`, no command of :data:`REFUSED_COMMANDS` (what Redis files under ``@admin`` and
  ``@dangerous``, but INFO) and no selector (Redis 7's ``(...)``, which the check does not read). A head that runs
  trial code could otherwise flush every cluster's state, reconfigure Redis or read every client's traffic;
- a cluster without ``redisUsername`` (:mod:`~tools.k8s_check.gcs_ft` refuses it) logs in as the default user: then
  the Redis sets ``requirepass $VAR`` with ``VAR`` from the ``redisPassword`` Secret and key;
- no Secret reaches a command line: no ``$(VAR)`` of a Secret's variable in ``command`` or ``args`` (Kubernetes
  expands it into the process's arguments, which every process of the node may read) and no ``--requirepass``.
"""

from __future__ import annotations

import re
from typing import Any

from tools.k8s_check.objects import PodSpec, Problem, containers, cpu_quantity, get_path, object_id, quantity

_KINDS = (("memory", quantity), ("cpu", cpu_quantity))
#: Categories without an ``@admin`` or ``@dangerous`` command in Redis 6.2 to 8 (``ACL CAT``); every command of theirs
#: touches only the keys the user's patterns allow.
SAFE_CATEGORIES = frozenset({"@hash", "@string"})
#: Redis's ``@admin`` and ``@dangerous`` commands (``ACL CAT``, Redis 6.2 and 7), but INFO: read-only server figures,
#: which Ray's GCS reads when it connects (INFO SENTINEL, INFO CLUSTER) and aborts without.
REFUSED_COMMANDS = frozenset({
    "acl", "bgrewriteaof", "bgsave", "client", "cluster", "config", "debug", "failover", "flushall", "flushdb", "keys",
    "lastsave", "latency", "migrate", "module", "monitor", "pfdebug", "pfselftest", "psync", "replconf", "replicaof",
    "restore", "restore-asking", "role", "save", "shutdown", "slaveof", "slowlog", "sort", "sort_ro", "swapdb", "sync",
    "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "function", "script"})  # scripts run any command
_BROAD = ("allcommands", "+@all", "allkeys", "~*", "%R~*", "%W~*", "%RW~*", "nopass")
_USER = re.compile(r"^\s*user\s+(\S+)(.*)$", re.MULTILINE)


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


def _script(pod: PodSpec) -> str:
    return "\n".join(str(w) for _, c in containers(pod) for w in (c.get("command") or []) + (c.get("args") or []))


def _variable(word: str) -> str | None:
    """``VAR`` of a word ``$VAR``, ``${VAR}`` or ``"$VAR"`` (None otherwise)."""
    match = re.fullmatch(r'"?\$\{?(\w+)\}?"?', word)
    return match.group(1) if match else None


def _users(script: str) -> dict[str, list[str]]:
    """The rules of each ``user`` line of Redis's configuration, by user name as written (``$VAR`` unexpanded)."""
    found: dict[str, list[str]] = {}
    for name, rules in _USER.findall(script):
        found.setdefault(name, []).extend(rules.split())
    return found


def _switch(rules: list[str]) -> str | None:
    """A user's last ``on`` or ``off`` rule (None: neither), the one Redis applies."""
    return next((r for r in reversed(rules) if r in ("on", "off")), None)


def _command_problems(pod: PodSpec) -> list[str]:
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
    if re.search(r"<<-?\s*['\"\\]", _script(pod)):
        found.append(f"{pod.where}: a quoted here-document (<<'EOF') hands its `$VAR`s (the login) to Redis "
                     "unexpanded: leave its delimiter unquoted")
    return found


def _requirepass_problems(pod: PodSpec, ref: dict[str, Any]) -> list[str]:
    names = {v for _, c in containers(pod) for v in _secret_variables(c, ref)}
    if any(re.search(rf'^\s*requirepass\s+"?\$\{{?{re.escape(n)}\}}?"?\s*$', _script(pod), re.MULTILINE)
           for n in names):
        return []
    return [f"{pod.where}: no `requirepass $VAR` line with VAR from Secret '{ref.get('name')}' key "
            f"'{ref.get('key')}', the clusters' redisPassword: Redis would ask no password, or another one"]


def _acl_problems(pod: PodSpec, username: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """The default user, and the GCS user the clusters' ``redisUsername`` names (see the module)."""
    users, found = _users(_script(pod)), []
    if _switch(users.get("default", [])) != "off":
        found.append(f"{pod.where}: the default user is usable (no `user default off` line): any client that "
                     "reaches Redis logs in with every command: add `user default off resetpass resetkeys -@all`")
    user_ref = get_path(username, "valueFrom", "secretKeyRef")
    if user_ref:
        variables = {v for _, c in containers(pod) for v in _secret_variables(c, user_ref)}
        names = [n for n in users if _variable(n) in variables]
        wanted = f"`user $VAR` line with VAR from Secret '{user_ref.get('name')}' key '{user_ref.get('key')}'"
    else:
        names = [n for n in users if n == str(username.get("value"))]
        wanted = f"`user {username.get('value')}` line"
    if not names:
        return found + [f"{pod.where}: no {wanted}, the clusters' redisUsername: no head could log in"]
    rules, where = users[names[0]], f"{pod.where}: the GCS user ({names[0]})"
    passwords = {v for _, c in containers(pod) for v in _secret_variables(c, ref)}
    if not any(r.startswith(">") and _variable(r[1:]) in passwords for r in rules):
        found.append(f"{where} has no password `>$VAR` with VAR from Secret '{ref.get('name')}' key "
                     f"'{ref.get('key')}', the clusters' redisPassword: no head could log in")
    if _switch(rules) != "on":
        found.append(f"{where} is not `on`: no head could log in")
    broad = [r for r in rules if r.lower() in _BROAD or r.startswith("(")
             or (r.startswith("+@") and r[1:].lower() not in SAFE_CATEGORIES)
             or (r.startswith("+") and not r.startswith("+@") and r[1:].split("|")[0].lower() in REFUSED_COMMANDS)]
    if broad:
        found.append(f"{where} may run or reach more than Ray's GCS needs ({' '.join(broad)}): a head that runs "
                     "trial code could flush, reconfigure or watch Redis, or reach every key: grant commands one by "
                     "one or by data type (+@hash), on keys that start with RAY")
    return found


def check_redis_server(redis: list[tuple[dict[str, Any], PodSpec]], options: dict[str, Any]) -> list[Problem]:
    """The QoS and the logins of the Redis pods a cluster's ``redisAddress`` reaches (see the module)."""
    ref = get_path(options, "redisPassword", "valueFrom", "secretKeyRef")
    username = options.get("redisUsername")
    found = []
    for obj, pod in redis:
        messages = _qos_problems(pod) + _command_problems(pod)
        if ref and isinstance(username, dict):
            messages += _acl_problems(pod, username, ref)
        elif ref:
            messages += _requirepass_problems(pod, ref)
        found += [Problem(object_id(obj), "gcs-ft", m) for m in messages]
    return found
