"""Who holds which MinIO user: MLflow's artifacts are out of the Ray pods' reach.

The bucket has two users (docs/security.md, "Who holds which credential"): the Ray pods' (Secret
:data:`RAY_SECRET`, policy ``$POLICY``: the bucket, with an explicit Deny on MLflow's artifacts prefix)
and the tracking server's (Secret :data:`MLFLOW_SECRET`, policy ``$MLFLOW_POLICY``: that prefix only).
A Ray worker runs trial code, so with the server's keys (or without the Deny) a trial could overwrite
or delete every artifact, registered models included, in S3 behind MLflow's auth. The checks:

- the tracking server (a container running ``mlflow server``) takes ``AWS_ACCESS_KEY_ID`` and
  ``AWS_SECRET_ACCESS_KEY`` from :data:`MLFLOW_SECRET` and does not hold :data:`RAY_SECRET`;
- no other container (Ray heads and workers, RayJob submitters, the autoscaler, the backup, the server's
  own init container) references :data:`MLFLOW_SECRET` (``env``, ``envFrom`` or a mounted volume), but
  the bootstrap step that creates the users (a container running :data:`USERS_SCRIPT`);
- :data:`USERS_SCRIPT` (read from the ConfigMap the bootstrap pod mounts) creates the Ray pods' policy
  with ``put_policy "$POLICY" STATEMENT...`` (one JSON object per argument), and one of its statements
  is a Deny, without a condition, of ``s3:GetObject``, ``s3:PutObject`` and ``s3:DeleteObject`` (``s3:*``)
  on ``arn:aws:s3:::BUCKET/PREFIX`` and ``arn:aws:s3:::BUCKET/PREFIX/*``, where ``s3://BUCKET/PREFIX`` is
  the server's ``--artifacts-destination`` (the script's ``$VARS`` are read from the bootstrap
  container's literal env values, so a Job whose ``BUCKET`` is another bucket fails too). This is a text
  check of the script: it does not run it.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from typing import Any

from tools.k8s_check.objects import PodSpec, Problem, containers, get_path, object_id, pod_specs, ray_cluster_spec

RAY_SECRET = "storage-credentials"
MLFLOW_SECRET = "mlflow-storage-credentials"
USERS_SCRIPT = "minio-users.sh"
S3_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
#: What the Deny must cover (``s3:*`` does).
DENIED_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
_MLFLOW_SERVER = re.compile(r"\bmlflow\s+server\b")
_DESTINATION = re.compile(r"--artifacts-destination[=\s]+[\"']?s3://([^/\s\"']+)/([^\s\"']*)")
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def _text(container: dict[str, Any]) -> str:
    return " ".join(str(part) for part in (container.get("command") or []) + (container.get("args") or []))


def is_tracking_server(container: dict[str, Any]) -> bool:
    """Whether ``container`` runs ``mlflow server``."""
    return bool(_MLFLOW_SERVER.search(_text(container)))


def runs_users_script(container: dict[str, Any]) -> bool:
    """Whether ``container`` runs the bootstrap step that creates the MinIO users."""
    return USERS_SCRIPT in _text(container)


def _all_containers(obj: dict[str, Any]) -> list[tuple[PodSpec | None, str, dict[str, Any]]]:
    """``(pod, where, container)`` of every container of ``obj``, the Ray autoscaler's options included."""
    found: list[tuple[PodSpec | None, str, dict[str, Any]]] = [
        (pod, where, c) for pod in pod_specs(obj) for where, c in containers(pod)]
    cluster = ray_cluster_spec(obj)
    if cluster and cluster.get("autoscalerOptions"):
        prefix = "spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec"
        found.append((None, f"{prefix}.autoscalerOptions", cluster["autoscalerOptions"]))
    return found


def _secret_keys(everything: list[dict[str, Any]], namespace: str | None) -> dict[str, set[str]]:
    return {get_path(o, "metadata", "name"): set(o.get("data") or {}) | set(o.get("stringData") or {})
            for o in everything if o.get("kind") == "Secret" and get_path(o, "metadata", "namespace") == namespace}


def env_secrets(container: dict[str, Any], secrets: dict[str, set[str]]) -> dict[str, str]:
    """Env var name -> the Secret it comes from (``env`` secretKeyRefs over ``envFrom`` secretRefs)."""
    found: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        name = get_path(source, "secretRef", "name")
        if name:
            found.update({f"{source.get('prefix', '')}{key}": name for key in secrets.get(name, ())})
    for env in container.get("env") or []:
        name = get_path(env, "valueFrom", "secretKeyRef", "name")
        if name:
            found[str(env.get("name"))] = name
        elif env.get("name") in found:
            del found[env["name"]]
    return found


def referenced_secrets(container: dict[str, Any], pod: PodSpec | None) -> set[str]:
    """Every Secret ``container`` reads: ``env``, ``envFrom`` and the secret volumes it mounts."""
    names = {get_path(e, "valueFrom", "secretKeyRef", "name") for e in container.get("env") or []}
    names |= {get_path(s, "secretRef", "name") for s in container.get("envFrom") or []}
    mounted = {m.get("name") for m in container.get("volumeMounts") or []}
    for volume in (pod.spec.get("volumes") or []) if pod else []:
        if volume.get("name") in mounted:
            names.add(get_path(volume, "secret", "secretName"))
            names |= {get_path(s, "secret", "name") for s in get_path(volume, "projected", "sources") or []}
    return {n for n in names if n}


def check_storage_users(everything: list[dict[str, Any]]) -> list[Problem]:
    """The tracking server's and the Ray pods' MinIO users (module docstring)."""
    found: list[Problem] = []
    destinations: list[tuple[str, str]] = []
    for obj in everything:
        oid = object_id(obj)
        secrets = _secret_keys(everything, get_path(obj, "metadata", "namespace"))
        for pod, where, c in _all_containers(obj):
            held = referenced_secrets(c, pod)
            if is_tracking_server(c):
                match = _DESTINATION.search(_text(c))
                if match:
                    destinations.append((match.group(1), match.group(2).strip("/")))
                sources = env_secrets(c, secrets)
                wrong = [k for k in S3_KEYS if sources.get(k) != MLFLOW_SECRET]
                if wrong:
                    found.append(Problem(oid, "storage", (
                        f"{where}: the tracking server's {' and '.join(wrong)} do not come from Secret "
                        f"'{MLFLOW_SECRET}' (its own MinIO user, the only one allowed MLflow's artifacts)")))
                if RAY_SECRET in held:
                    found.append(Problem(oid, "storage", (
                        f"{where}: the tracking server holds Secret '{RAY_SECRET}' (the Ray pods' MinIO user, "
                        f"denied MLflow's artifacts); it needs only '{MLFLOW_SECRET}'")))
            elif MLFLOW_SECRET in held and not runs_users_script(c):
                found.append(Problem(oid, "storage", (
                    f"{where}: holds Secret '{MLFLOW_SECRET}' (the MinIO user of MLflow's artifacts): only the "
                    f"tracking server and the bootstrap step ({USERS_SCRIPT}) may; a trial could overwrite or "
                    "delete every artifact and registered model with it")))
    for bucket, prefix in sorted(set(destinations)):
        found += _check_ray_policy(everything, bucket, prefix)
    return found


def _check_ray_policy(everything: list[dict[str, Any]], bucket: str, prefix: str) -> list[Problem]:
    """The Deny on ``s3://bucket/prefix`` in the Ray pods' policy of every bootstrap step's script."""
    found: list[Problem] = []
    maps = {(get_path(o, "metadata", "namespace"), get_path(o, "metadata", "name")): o.get("data") or {}
            for o in everything if o.get("kind") == "ConfigMap"}
    arns = (f"arn:aws:s3:::{bucket}/{prefix}", f"arn:aws:s3:::{bucket}/{prefix}/*")
    for obj in everything:
        namespace = get_path(obj, "metadata", "namespace")
        for pod, where, c in _all_containers(obj):
            if pod is None or not runs_users_script(c):
                continue
            scripts = [maps[(namespace, name)][USERS_SCRIPT] for name in
                       (get_path(v, "configMap", "name") for v in pod.spec.get("volumes") or [])
                       if USERS_SCRIPT in maps.get((namespace, name), {})]
            env = {str(e.get("name")): str(e["value"]) for e in c.get("env") or [] if "value" in e}
            for script in scripts:
                missing = _missing_deny(script, env, arns)
                if missing:
                    found.append(Problem(object_id(obj), "storage", (
                        f"{where}: the Ray pods' MinIO policy ({USERS_SCRIPT}: put_policy \"$POLICY\") {missing}: "
                        f"it needs a Deny of s3:* on {arns[0]} and {arns[1]} (MLflow's --artifacts-destination), "
                        "or trial code can overwrite and delete MLflow's artifacts")))
    return found


def _missing_deny(script: str, env: dict[str, str], arns: tuple[str, str]) -> str | None:
    """What the ``put_policy "$POLICY"`` call of ``script`` lacks (None: it has the Deny of ``arns``)."""
    statements = policy_statements(script, "POLICY")
    if statements is None:
        return "is not created by a put_policy \"$POLICY\" call"
    documents = []
    for i, text in enumerate(statements):
        text = _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)
        try:
            documents.append(json.loads(text))
        except ValueError as exc:
            return f"has a statement ({i + 1}) that is not JSON ({exc})"
    if any(_denies(d, arns) for d in documents if isinstance(d, dict)):
        return None
    return "has no such Deny"


def policy_statements(script: str, variable: str) -> list[str] | None:
    """The statement arguments of the script's ``put_policy "$VARIABLE" ...`` call, unquoted as the shell
    would (variables left unexpanded); None when there is none."""
    for line in script.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        if len(words) >= 2 and words[0] == "put_policy" and words[1] in (f"${variable}", f"${{{variable}}}"):
            return words[2:]
    return None


def _listed(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _denies(statement: dict[str, Any], arns: tuple[str, ...]) -> bool:
    """Whether ``statement`` is an unconditional Deny of :data:`DENIED_ACTIONS` on every one of ``arns``."""
    if statement.get("Effect") != "Deny" or statement.get("Condition") or "NotAction" in statement \
            or "NotResource" in statement:
        return False
    actions, resources = _listed(statement.get("Action")), _listed(statement.get("Resource"))
    return all(any(fnmatch.fnmatchcase(a, p) for p in actions) for a in DENIED_ACTIONS) and \
        all(any(fnmatch.fnmatchcase(arn, p) for p in resources) for arn in arns)
