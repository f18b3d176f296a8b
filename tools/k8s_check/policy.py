"""Policy checks of rendered objects.

- every container (the KubeRay autoscaler's options included) has CPU and memory requests and limits,
  runs as a non-root user without privilege escalation, drops all capabilities, has a read-only root
  filesystem, a RuntimeDefault (or Localhost) seccomp profile, no hostPort, and an image pinned by digest
  (``name:tag@sha256:...``) and named with its registry (``docker.io/library/postgres``); no secret-looking environment
  variable (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*KEY*``) has a plaintext ``value`` and no URL
  carries a password, not even as a ``$(VAR)`` reference (a URL ends up on command lines); no container adds a
  capability, and no command line gives a secret-looking flag (``--password``, ``--secret-key``) a literal value;
- no pod shares the node's network, PID or IPC namespace or mounts a hostPath; no pod has
  ``automountServiceAccountToken`` on, and no container mounts a service-account token (a
  projected ``serviceAccountToken`` volume, or anything at the token's directory): only the autoscaler of
  an autoscaling Ray cluster calls the Kubernetes API, and it alone mounts a projected token volume of the
  head (``autoscalerOptions.volumeMounts``), so the head's Ray container (and the code of a job that runs
  there) has none;
- namespaces enforce Pod Security Admission's ``restricted`` profile;
- Secrets no longer hold the examples' placeholders, images no longer carry the placeholder digest and network
  policies no longer name the placeholder API server address (unless the examples stood in for missing
  credentials files);
- references to Secrets, ConfigMaps and their keys resolve (the Ray token Secret's ``auth_token`` and the GCS
  Redis password of ``gcsFaultToleranceOptions`` too);
- Ray clusters run the project's Ray version, autoscale, require token auth (``authOptions.mode: token``),
  keep GPU groups at ``minReplicas: 0`` with a ``maxReplicas``, the ``nvidia.com/gpu`` request and
  toleration and no ``nvidia.com/gpu.present`` nodeSelector (set only by the GPU operator's feature
  discovery); RayJobs have deadlines (``activeDeadlineSeconds``, ``preRunningDeadlineSeconds``) and delete their
  cluster when the sweep ends (``shutdownAfterJobFinishes`` with ``ttlSecondsAfterFinished``);
- nothing is reachable from outside the cluster: no Service of type NodePort or LoadBalancer or with externalIPs, no
  Ingress, and no Ray head Service or Ingress of KubeRay's making (``headGroupSpec.serviceType``, ``headService``,
  ``enableIngress``): the dashboard, Jobs API, GCS and client port stay behind ``kubectl port-forward``.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from sentsweep.config import PLATFORM_POD_ENV
from tools.k8s_check.objects import (
    GPU_RESOURCE,
    Problem,
    api_group,
    containers,
    get_path,
    object_id,
    pod_specs,
    ray_cluster_spec,
)
from tools.k8s_check.plaintext import SECRET_NAME, URL_PASSWORD, secret_flags

PLACEHOLDER = "change-me"
#: The digest the committed overlays carry until an image is pushed (docs/deploy.md, "Images by digest").
PLACEHOLDER_DIGEST = "sha256:" + "0" * 64
#: The address the committed overlays give the Kubernetes API server until it is patched in (a documentation
#: address, RFC 5737: reaches nothing; k8s/overlays/*/kube-api.yaml).
PLACEHOLDER_API_SERVER = "192.0.2.1/32"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
#: Where client libraries (the Ray autoscaler's included) read the pod's service-account token.
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
RAY_TOKEN_KEY = "auth_token"  # the key KubeRay reads from authOptions.secretName
CONSTRAINTS = Path(__file__).resolve().parents[2] / "constraints.txt"


#: Pod fields that share a namespace of the node (Pod Security's baseline forbids them).
HOST_NAMESPACES = ("hostNetwork", "hostPID", "hostIPC")


def check_containers(obj: dict[str, Any]) -> list[Problem]:
    """Resources, non-root, privileges, read-only root, pinned images, no plaintext secrets."""
    oid = object_id(obj)
    problems: list[Problem] = []
    for pod in pod_specs(obj):
        pod_sc = pod.spec.get("securityContext") or {}
        for where, container in containers(pod):
            problems += [Problem(oid, "policy", f"{where}: {m}") for m in _container_problems(container, pod_sc)]
    cluster = ray_cluster_spec(obj)
    if cluster and cluster.get("enableInTreeAutoscaling"):
        prefix = "spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec"
        options = cluster.get("autoscalerOptions") or {}
        head_sc = get_path(cluster, "headGroupSpec", "template", "spec", "securityContext") or {}
        autoscaler = {"name": "autoscaler", "image": "(the head's image)", **options}
        problems += [Problem(oid, "policy", f"{prefix}.autoscalerOptions: {m}")
                     for m in _container_problems(autoscaler, head_sc)]
    return problems


def _container_problems(c: dict[str, Any], pod_sc: dict[str, Any]) -> list[str]:
    found = []
    resources = c.get("resources") or {}
    for kind in ("requests", "limits"):
        missing = [r for r in ("cpu", "memory") if r not in (resources.get(kind) or {})]
        if missing:
            found.append(f"no {kind} for {' and '.join(missing)}")
    sc = c.get("securityContext") or {}
    if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
        found.append("runAsNonRoot is not true")
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if user is None or int(user) == 0:
        found.append("runAsUser is not set to a non-root user")
    if sc.get("allowPrivilegeEscalation") is not False:
        found.append("allowPrivilegeEscalation is not false")
    if sc.get("privileged"):
        found.append("privileged")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        found.append("capabilities do not drop ALL")
    if (sc.get("capabilities") or {}).get("add"):
        found.append(f"capabilities add {sc['capabilities']['add']} (none is needed)")
    if sc.get("readOnlyRootFilesystem") is not True:
        found.append("readOnlyRootFilesystem is not true")
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        found.append("seccompProfile is not RuntimeDefault (or Localhost)")
    if c.get("ports") and any(p.get("hostPort") for p in c["ports"]):
        found.append("a port is bound on the node (hostPort)")
    image = str(c.get("image", ""))
    registry = image.partition("/")[0] if "/" in image else ""
    if not image.startswith("(") and not DIGEST.search(image):
        found.append(f"image '{image}' is not pinned by digest (name:tag@sha256:...)")
    if not image.startswith("(") and not ("." in registry or ":" in registry or registry == "localhost"):
        found.append(f"image '{image}' names no registry (docker.io/library/postgres, not postgres): a node whose "
                     "runtime resolves short names strictly (CRI-O) refuses it")
    for env in c.get("env") or []:
        name = str(env.get("name", ""))
        if "value" in env and SECRET_NAME.search(name):
            found.append(f"env {name} has a plaintext value (use valueFrom.secretKeyRef)")
    texts = [str(e.get("value", "")) for e in c.get("env") or []] + [str(a) for a in
                                                                    (c.get("command") or []) + (c.get("args") or [])]
    found += [f"{flag} gives a credential on the command line: read it from a Secret's variable"
              for flag in secret_flags(texts)]
    if any(URL_PASSWORD.search(t) for t in texts):
        found.append("a URL holds a password (a URL reaches command lines, /proc/<pid>/cmdline, and config files, "
                     "even as $(VAR)): give it in the client's own variable from a Secret (libpq: PGPASSWORD)")
    return found


def check_pods(obj: dict[str, Any]) -> list[Problem]:
    """The node's namespaces and folders out of reach; service-account tokens: none automounted, none mounted into a
    container, the autoscaler's own."""
    oid = object_id(obj)
    found = []
    for pod in pod_specs(obj):
        shared = [name for name in HOST_NAMESPACES if pod.spec.get(name)]
        if shared:
            found.append(Problem(oid, "policy", f"{pod.where}: shares the node's namespaces ({', '.join(shared)})"))
        found += [Problem(oid, "policy", f"{pod.where}: volume {v.get('name')} is a hostPath (the node's files)")
                  for v in pod.spec.get("volumes") or [] if "hostPath" in v]
        if pod.spec.get("automountServiceAccountToken") is not False:
            found.append(Problem(oid, "policy", f"{pod.where}: automountServiceAccountToken is not false (only "
                                                "the Ray autoscaler calls the Kubernetes API, with its own mount)"))
        for where, c in containers(pod):
            mount = _token_mount(c, pod.spec)
            if mount:
                found.append(Problem(oid, "policy", f"{where}: mounts a service-account token ({mount}); only the "
                                                    "Ray autoscaler (autoscalerOptions.volumeMounts) may"))
    cluster = ray_cluster_spec(obj)
    if cluster and cluster.get("enableInTreeAutoscaling"):
        head = get_path(cluster, "headGroupSpec", "template", "spec") or {}
        autoscaler = cluster.get("autoscalerOptions") or {}
        prefix = ("spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec") + ".autoscalerOptions"
        if _token_mount(autoscaler, head) != SERVICE_ACCOUNT_DIR:
            found.append(Problem(oid, "policy", f"{prefix}: the autoscaler gets no service-account token: mount a "
                                                "projected serviceAccountToken volume of the head at "
                                                f"{SERVICE_ACCOUNT_DIR}"))
        found += [Problem(oid, "policy", f"{prefix}: {why}") for why in _token_holder_isolation(autoscaler, head)]
    return found


def _token_holder_isolation(autoscaler: dict[str, Any], head: dict[str, Any]) -> list[str]:
    """Why code running in the head's other containers could act with the autoscaler's token: a volume both mount
    that the autoscaler may write (and so reads back: a ``.pth`` file planted in a user site under a shared home,
    imported at its next start), or a user site left on (``PYTHONNOUSERSITE``)."""
    found = []
    others = {m.get("name") for c in head.get("containers") or [] for m in c.get("volumeMounts") or []}
    for mount in autoscaler.get("volumeMounts") or []:
        if mount.get("name") in others and not _token_mount({"volumeMounts": [mount]}, head):  # a token: above
            found.append(f"volume {mount.get('name')} (at {mount.get('mountPath')}) is shared with the head's "
                         "containers: code there could plant what the token holder imports; give it a volume of "
                         "its own")
    env = {e.get("name"): e.get("value") for e in autoscaler.get("env") or []}
    if env.get("PYTHONNOUSERSITE") != "1":
        found.append("env PYTHONNOUSERSITE is not \"1\": the token holder would import a user site from its home")
    return found


def _token_mount(container: dict[str, Any], pod_spec: dict[str, Any]) -> str | None:
    """Where ``container`` mounts a service-account token: the token's directory when a mount names a
    volume projecting one there, else the mount path or volume that carries one (None: no token)."""
    token_volumes = {v.get("name") for v in pod_spec.get("volumes") or []
                     if any("serviceAccountToken" in s for s in get_path(v, "projected", "sources") or [])}
    found = None
    for mount in container.get("volumeMounts") or []:
        path = str(mount.get("mountPath", "")).rstrip("/")
        if mount.get("name") in token_volumes and path == SERVICE_ACCOUNT_DIR:
            return path
        if mount.get("name") in token_volumes:
            found = found or f"volume {mount.get('name')} at {path}"
        elif path == SERVICE_ACCOUNT_DIR or path.startswith(SERVICE_ACCOUNT_DIR + "/"):
            found = found or path
    return found


def check_namespace(obj: dict[str, Any]) -> list[Problem]:
    """Namespaces enforce Pod Security Admission's restricted profile."""
    if obj.get("kind") != "Namespace" or get_path(obj, "metadata", "labels", PSA_ENFORCE) == "restricted":
        return []
    return [Problem(object_id(obj), "policy", f"label {PSA_ENFORCE} is not 'restricted'")]


def check_placeholders(obj: dict[str, Any], placeholders_allowed: bool) -> list[Problem]:
    """Secrets must not still hold the examples' placeholder values, images the placeholder digest, nor network
    policies the placeholder API server address (unless the examples stood in for missing credentials files, i.e.
    nothing is being deployed)."""
    if placeholders_allowed:
        return []
    oid = object_id(obj)
    found = [Problem(oid, "policy", f"{where}: image '{c.get('image')}' carries the placeholder digest")
             for pod in pod_specs(obj) for where, c in containers(pod) if PLACEHOLDER_DIGEST in str(c.get("image"))]
    if obj.get("kind") == "NetworkPolicy":
        found += [Problem(oid, "policy", f"spec.egress[{i}]: ipBlock {PLACEHOLDER_API_SERVER} is the placeholder: "
                          "put your API server's addresses in the overlay's kube-api.yaml")
                  for i, rule in enumerate(get_path(obj, "spec", "egress") or [])
                  if any((peer.get("ipBlock") or {}).get("cidr") == PLACEHOLDER_API_SERVER
                         for peer in rule.get("to") or [])]
    if obj.get("kind") == "Secret":
        found += [Problem(oid, "policy", f"data.{key} still holds the example's placeholder")
                  for key, value in (obj.get("data") or {}).items()
                  if PLACEHOLDER in base64.b64decode(value).decode("utf-8", "replace")]
    return found


def check_ray(obj: dict[str, Any], ray_version: str | None) -> list[Problem]:
    """Ray version, autoscaling, GPU groups scaling from zero to a bound, one project image."""
    cluster = ray_cluster_spec(obj)
    if cluster is None:
        return []
    oid = object_id(obj)
    found: list[str] = []
    if ray_version and str(cluster.get("rayVersion")) != ray_version:
        found.append(f"rayVersion {cluster.get('rayVersion')!r} differs from the project's ray {ray_version}")
    if get_path(cluster, "headGroupSpec", "rayStartParams", "dashboard-host") != "0.0.0.0":
        found.append("the head's dashboard (Jobs API) does not listen on 0.0.0.0")
    if get_path(cluster, "authOptions", "mode") != "token":
        found.append("no token auth: set authOptions.mode: token (and secretName: the Secret with auth_token)")
    for pod in pod_specs(obj):
        for where, c in containers(pod):
            env = {e.get("name"): e.get("value") for e in c.get("env") or []}
            mode = env.get("RAY_AUTH_MODE", "token")
            if pod.group is not None and mode != "token":
                found.append(f"{where}: env RAY_AUTH_MODE={mode} turns token auth off")
            if pod.group is not None and str(c.get("name", "")).startswith("ray-") and env.get(PLATFORM_POD_ENV) != "1":
                found.append(f"{where}: env {PLATFORM_POD_ENV} is not \"1\": a resume in this Ray container "
                             "(--resume-interrupted, submit --resume) would be refused without --trust-storage")
    if obj.get("kind") == "RayJob":
        for deadline in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
            if not get_path(obj, "spec", deadline):
                found.append(f"no spec.{deadline}: a sweep that never gets its resources holds the cluster forever")
        if get_path(obj, "spec", "shutdownAfterJobFinishes") is not True:
            found.append("spec.shutdownAfterJobFinishes is not true: the sweep's Ray cluster (its GPU workers "
                         "included) outlives the sweep")
        elif get_path(obj, "spec", "ttlSecondsAfterFinished") is None:
            found.append("no spec.ttlSecondsAfterFinished: set how long the finished sweep's cluster stays")
    workers = cluster.get("workerGroupSpecs") or []
    for i, group in enumerate(workers):
        name = group.get("groupName", i)
        low, high = group.get("minReplicas"), group.get("maxReplicas")
        if high is None:
            found.append(f"worker group {name}: no maxReplicas")
        elif low is not None and not (0 <= low <= group.get("replicas", low) <= high):
            found.append(f"worker group {name}: need 0 <= minReplicas <= replicas <= maxReplicas")
        if any(GPU_RESOURCE in (get_path(c, "resources", kind) or {})
               for c in get_path(group, "template", "spec", "containers") or [] for kind in ("requests", "limits")):
            if low != 0:
                found.append(f"GPU worker group {name}: minReplicas must be 0 (GPUs idle otherwise)")
            if not isinstance(high, int) or high < 1:
                found.append(f"GPU worker group {name}: maxReplicas must bound the GPU nodes (>= 1)")
            gpu_limits = [get_path(c, "resources", "limits", GPU_RESOURCE)
                          for c in get_path(group, "template", "spec", "containers") or []]
            if not any(gpu_limits):
                found.append(f"GPU worker group {name}: {GPU_RESOURCE} must be in limits")
            pod_spec = get_path(group, "template", "spec") or {}
            if GPU_PRESENT_LABEL in (pod_spec.get("nodeSelector") or {}):
                found.append(f"GPU worker group {name}: nodeSelector {GPU_PRESENT_LABEL} is set only by the GPU "
                             f"operator's feature discovery; the {GPU_RESOURCE} request places the pods")
            if not any(t.get("key") == GPU_RESOURCE and t.get("operator") == "Exists"
                       for t in pod_spec.get("tolerations") or []):
                found.append(f"GPU worker group {name}: no toleration of the {GPU_RESOURCE} taint (operator Exists)")
    if any(g.get("minReplicas") != g.get("maxReplicas") for g in workers) \
            and not cluster.get("enableInTreeAutoscaling"):
        found.append("worker groups range between min and max replicas but enableInTreeAutoscaling is off")
    images = {c.get("image") for pod in pod_specs(obj) if pod.group is not None for _, c in containers(pod)}
    if len(images) > 1:
        found.append(f"the Ray pods run different images: {sorted(map(str, images))}")
    return [Problem(oid, "policy", m) for m in found]


#: Service types that open a port on every node or an address outside the cluster.
EXPOSED_SERVICE_TYPES = ("NodePort", "LoadBalancer")


def check_exposure(obj: dict[str, Any]) -> list[Problem]:
    """Nothing reachable from outside the cluster: Services of type ClusterIP without externalIPs, no Ingress, and
    a Ray head whose Service KubeRay makes the same way (the dashboard, Jobs API, GCS and client port)."""
    oid = object_id(obj)
    found: list[str] = []
    if obj.get("kind") == "Ingress":
        found.append("an Ingress exposes the namespace outside the cluster (use kubectl port-forward)")
    services = [("spec", obj.get("spec") or {})] if obj.get("kind") == "Service" and api_group(obj) == "" else []
    cluster = ray_cluster_spec(obj)
    if cluster is not None:
        prefix = "spec.rayClusterSpec.headGroupSpec" if obj["kind"] == "RayJob" else "spec.headGroupSpec"
        head = cluster.get("headGroupSpec") or {}
        services.append((f"{prefix}.serviceType", {"type": head.get("serviceType")}))
        services.append((f"{prefix}.headService.spec", get_path(head, "headService", "spec") or {}))
        if head.get("enableIngress"):
            found.append(f"{prefix}.enableIngress: KubeRay would expose the head's dashboard (Jobs API) through an "
                         "Ingress")
    for where, spec in services:
        if spec.get("type") in EXPOSED_SERVICE_TYPES:
            found.append(f"{where}: type {spec['type']} exposes its ports outside the cluster (use ClusterIP and "
                         "kubectl port-forward)")
        if spec.get("externalIPs"):
            found.append(f"{where}: externalIPs expose its ports outside the cluster")
    return [Problem(oid, "policy", m) for m in found]


def check_references(obj: dict[str, Any], everything: list[dict[str, Any]]) -> list[Problem]:
    """Secret/ConfigMap names and keys used by the pods exist among ``everything`` (same namespace)."""
    namespace = get_path(obj, "metadata", "namespace")
    data: dict[tuple[str, str], set[str]] = {}
    for other in everything:
        if other.get("kind") in ("Secret", "ConfigMap") and get_path(other, "metadata", "namespace") == namespace:
            keys = set(other.get("data") or {}) | set(other.get("binaryData") or {})
            data[(other["kind"], other["metadata"]["name"])] = keys
    found = []

    def need(kind: str, name: Any, key: Any, where: str) -> None:
        if (kind, name) not in data:
            found.append(f"{where}: {kind} '{name}' does not exist")
        elif key is not None and key not in data[(kind, name)]:
            found.append(f"{where}: {kind} '{name}' has no key '{key}'")

    token_secret = get_path(ray_cluster_spec(obj), "authOptions", "secretName")
    if token_secret:
        need("Secret", token_secret, RAY_TOKEN_KEY, "authOptions.secretName")
    for field in ("redisPassword", "redisUsername"):
        where = f"gcsFaultToleranceOptions.{field}"
        for kind, target in _value_refs(get_path(ray_cluster_spec(obj), "gcsFaultToleranceOptions", field)):
            need(kind, target.get("name"), target.get("key"), where)
    for pod in pod_specs(obj):
        for volume in pod.spec.get("volumes") or []:
            if "configMap" in volume and not volume["configMap"].get("optional"):
                need("ConfigMap", volume["configMap"].get("name"), None, f"{pod.where}.volumes[{volume['name']}]")
            if "secret" in volume and not volume["secret"].get("optional"):
                need("Secret", volume["secret"].get("secretName"), None, f"{pod.where}.volumes[{volume['name']}]")
        for where, c in containers(pod):
            for env in c.get("env") or []:
                for kind, target in _value_refs(env):
                    need(kind, target.get("name"), target.get("key"), f"{where}.env[{env.get('name')}]")
            for source in c.get("envFrom") or []:
                for ref, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                    if source.get(ref) and not source[ref].get("optional"):
                        need(kind, source[ref].get("name"), None, f"{where}.envFrom")
    return [Problem(object_id(obj), "references", m) for m in found]


def _value_refs(value: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(kind, keyRef)`` of the Secret or ConfigMap key an env var (or a field of its shape) reads, unless
    optional."""
    refs = [(kind, get_path(value, "valueFrom", ref)) for ref, kind in (("secretKeyRef", "Secret"),
                                                                          ("configMapKeyRef", "ConfigMap"))]
    return [(kind, target) for kind, target in refs if isinstance(target, dict) and not target.get("optional")]


def project_ray_version(constraints: Path = CONSTRAINTS) -> str | None:
    """The ``ray`` version ``constraints.txt`` pins: the one the image installs (None when it pins none)."""
    for line in constraints.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^ray(\[[^\]]*\])?==([\w.]+)", line.split("#")[0].replace(" ", ""))
        if match:
            return match.group(2)
    return None
