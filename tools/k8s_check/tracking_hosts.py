"""The Host names the tracking server answers (``mlflow server --allowed-hosts``): no wildcard in a name.

MLflow checks each request's ``Host`` header against the ``--allowed-hosts`` patterns (or
``MLFLOW_SERVER_ALLOWED_HOSTS``) with ``fnmatch``; the check is its defence against DNS rebinding, where
a page a user opens on ``mlflow.attacker.example`` makes that name resolve to the server's address and
then calls it from the user's browser. A pattern with a wildcard in the host name (``mlflow.*``) admits
such a name. The checks, for every container running ``mlflow server``:

- it names its allowed hosts (without them MLflow admits only localhost and the private addresses, so
  the Ray pods' ``http://mlflow:5000`` is refused);
- no pattern has ``*`` or ``?`` in its host part; a wildcard port (``mlflow:*``) is fine. The in-cluster
  names are spelt out, ``mlflow.$POD_NAMESPACE.svc.cluster.local`` with the namespace from the downward
  API (not ``mlflow.$POD_NAMESPACE``, public in a namespace named like a top-level domain: ``mlflow.ml``).
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from tools.k8s_check.objects import Problem, containers, object_id, pod_specs
from tools.k8s_check.storage import is_tracking_server

ENV_NAME = "MLFLOW_SERVER_ALLOWED_HOSTS"
_FLAG = re.compile(r"^--allowed-hosts(?:=(.*))?$")


def allowed_hosts(container: dict[str, Any]) -> list[str] | None:
    """The patterns of ``container``'s ``--allowed-hosts`` (or its env var), None when it names none."""
    words: list[str] = []
    for part in (container.get("command") or []) + (container.get("args") or []):
        try:
            words += shlex.split(str(part), comments=False)
        except ValueError:
            words += str(part).split()
    for i, word in enumerate(words):
        match = _FLAG.match(word)
        if match:
            value = match.group(1) if match.group(1) is not None else (words[i + 1] if i + 1 < len(words) else "")
            return [p.strip() for p in value.split(",") if p.strip()]
    for env in container.get("env") or []:
        if env.get("name") == ENV_NAME and "value" in env:
            return [p.strip() for p in str(env["value"]).split(",") if p.strip()]
    return None


def host_part(pattern: str) -> str:
    """The name of a ``NAME``, ``NAME:PORT`` or ``[IPv6]:PORT`` pattern, without the port."""
    if pattern.startswith("["):
        return pattern.split("]", 1)[0] + "]"
    return pattern.rsplit(":", 1)[0] if pattern.count(":") == 1 else pattern


def check_tracking_hosts(obj: dict[str, Any]) -> list[Problem]:
    """The allowed hosts of every tracking-server container of ``obj`` (module docstring)."""
    found: list[Problem] = []
    for pod in pod_specs(obj):
        for where, c in containers(pod):
            if not is_tracking_server(c):
                continue
            patterns = allowed_hosts(c)
            if patterns is None:
                found.append(Problem(object_id(obj), "policy", (
                    f"{where}: mlflow server without --allowed-hosts: it admits only localhost and private "
                    "addresses, so the in-cluster name 'mlflow' is refused")))
                continue
            wild = [p for p in patterns if p != "*" and any(ch in host_part(p) for ch in "*?")]
            if "*" in patterns:
                wild.append("*")
            if wild:
                found.append(Problem(object_id(obj), "policy", (
                    f"{where}: --allowed-hosts {', '.join(wild)}: a wildcard in a host name also admits names "
                    "anyone can register (DNS rebinding); spell the names out (a wildcard port is fine)")))
    return found
