"""Offline validation of the Kubernetes manifests in ``k8s/``: render, check schemas, check policy.

    python -m sentsweep.platform.manifests k8s/overlays/local k8s/overlays/local/sweep

renders each kustomization (``kubectl kustomize`` when kubectl is on PATH, else the Python renderer of
:mod:`sentsweep.platform.kustomize`; the credentials files a clone lacks are stood in for by their
committed ``*.env.example``), then checks every object:

- **schema**: core kinds with ``kubernetes-validate --strict`` (unknown fields rejected); RayCluster and
  RayJob against KubeRay's CRD schemas (:mod:`sentsweep.platform.crd`) plus a strict pass that rejects
  fields the schema does not name (their ``metadata`` as a strict ObjectMeta);
- **policy**: every container (the KubeRay autoscaler's options included) has CPU and memory requests
  and limits, runs as a non-root user without privilege escalation, drops all capabilities, has a
  read-only root filesystem and a pinned image; no secret-looking environment variable
  (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*KEY*``) has a plaintext ``value`` and no URL carries a
  plaintext password; references to Secrets, ConfigMaps and their keys resolve; Services and
  NetworkPolicies select pods that exist, and every Deployment/StatefulSet is behind an ingress policy;
  Ray clusters run the project's Ray version, autoscale, and keep GPU groups at ``minReplicas: 0`` with
  a ``maxReplicas``;
- **entrypoint**: a RayJob's entrypoint parses with ``sentsweep.cli.build_parser()``, names a config
  that is in the ConfigMap mounted on the head, the config validates with
  :func:`~sentsweep.platform.config.parse_sweep_config` (``--set`` overrides applied), a trial's
  resources fit a worker group, and, when the job retries (``backoffLimit`` > 0), the retry continues
  the sweep (``--resume-interrupted``) whose state is in shared storage and runs on a tracking server.

Objects of several kustomizations that live together (an overlay and its ``sweep``) are checked
together, so the RayJob's references to the platform's Secrets resolve.
"""

from __future__ import annotations

import base64
import contextlib
import io
import re
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sentsweep.errors import SentsweepError
from sentsweep.platform import crd, kustomize

KUBERNETES_VERSION = "1.33"
SECRET_NAME = re.compile(r"(^|_)(PASSWORD|PASSWD|SECRET|TOKEN|KEY|CREDENTIALS?)(_|$)", re.IGNORECASE)
URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:(?!\$\()[^@\s/]+@", re.IGNORECASE)
PLACEHOLDER = "change-me"
GPU_RESOURCE = "nvidia.com/gpu"
_QUANTITY = re.compile(r"^([0-9.]+)(m?)$")


@dataclass(frozen=True)
class Problem:
    """One finding: the object (``Kind/name``), the check that found it and what is wrong."""

    obj: str
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.obj}: {self.message} [{self.check}]"


@dataclass
class Rendered:
    """The objects of one kustomization, how they were rendered, and which example files stood in."""

    path: Path
    objects: list[dict[str, Any]]
    engine: str
    examples_used: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(o["kind"] for o in self.objects).items()))


@dataclass
class Report:
    """The rendered kustomizations and every problem found in them."""

    rendered: list[Rendered]
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


class ManifestError(SentsweepError):
    """The manifests cannot be rendered or validated (a missing tool, a broken kustomization)."""


# -- rendering -----------------------------------------------------------------------------------------

def find_root(path: str | Path) -> Path:
    """The folder holding ``base/`` (``k8s/``) above a kustomization, else the kustomization itself."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents):
        if (candidate / "base").is_dir() and any((candidate / "base" / n).is_file()
                                                 for n in kustomize.KUSTOMIZATION_NAMES):
            return candidate
    return path


@contextlib.contextmanager
def credentials_stand_in(path: str | Path) -> Iterator[tuple[Path, list[str]]]:
    """``path`` itself when every ``*.env`` a ``*.env.example`` stands for exists, else the same path in a
    temporary copy of its tree where the examples are copied to the missing files."""
    path = Path(path).resolve()
    root = find_root(path)
    folders = kustomization_folders(path)
    missing = [e for e in sorted(root.rglob("*.env.example")) if not e.with_suffix("").exists()
               and any(e.is_relative_to(folder) for folder in folders)]
    if not missing:
        yield path, []
        return
    with tempfile.TemporaryDirectory(prefix="sentsweep-k8s-") as tmp:
        copy = Path(tmp) / root.name
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        for example in missing:
            shutil.copyfile(copy / example.relative_to(root), copy / example.with_suffix("").relative_to(root))
        yield copy / path.relative_to(root), [str(e.with_suffix("").relative_to(root)) for e in missing]


def kustomization_folders(path: str | Path) -> list[Path]:
    """``path`` and every kustomization folder its ``resources`` reach, recursively."""
    found: list[Path] = []
    pending = [Path(path).resolve()]
    while pending:
        folder = pending.pop()
        if folder in found:
            continue
        found.append(folder)
        try:
            spec = yaml.safe_load(kustomize.find_kustomization(folder).read_text(encoding="utf-8")) or {}
        except kustomize.KustomizeError:
            continue
        pending += [(folder / r).resolve() for r in spec.get("resources") or [] if (folder / r).is_dir()]
    return found


def render(path: str | Path, engine: str = "auto") -> Rendered:
    """Render the kustomization ``path`` with ``engine``: ``"kubectl"``, ``"python"`` or ``"auto"``
    (kubectl when on PATH)."""
    if engine == "auto":
        engine = "kubectl" if kustomize.kubectl_available() else "python"
    if engine not in ("kubectl", "python"):
        raise ManifestError(f"unknown engine '{engine}' (kubectl, python or auto)")
    with credentials_stand_in(path) as (target, examples):
        try:
            objects = kustomize.build_with_kubectl(target) if engine == "kubectl" else kustomize.build(target)
        except kustomize.KustomizeError as exc:
            raise ManifestError(str(exc).replace(str(target), str(path))) from None
    return Rendered(Path(path), objects, engine, examples)


# -- object helpers ------------------------------------------------------------------------------------

def object_id(obj: dict[str, Any]) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def _get(node: Any, *keys: str | int) -> Any:
    for key in keys:
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return None
    return node


def ray_cluster_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The cluster spec of a RayCluster or RayJob (None for other kinds)."""
    if obj.get("kind") == "RayCluster":
        return obj.get("spec") or {}
    if obj.get("kind") == "RayJob":
        return _get(obj, "spec", "rayClusterSpec")
    return None


@dataclass
class PodSpec:
    """A pod spec inside an object, where it is, its labels, and (Ray) its group."""

    where: str
    spec: dict[str, Any]
    labels: dict[str, str]
    group: dict[str, Any] | None = None


def pod_specs(obj: dict[str, Any]) -> list[PodSpec]:
    """Every pod spec an object will create pods from (core workloads, Ray groups, RayJob's submitter)."""
    found: list[PodSpec] = []
    group = kustomize.api_group(obj)
    path = kustomize.WORKLOAD_POD_SPECS.get((group, obj.get("kind", "")))
    if path:
        parts = path.split("/")
        template = _get(obj, *parts[:-1]) or {}  # a Pod is its own template
        labels = _get(template, "metadata", "labels") or {}
        found.append(PodSpec(path.replace("/", "."), _get(obj, *parts) or {}, labels))
    cluster = ray_cluster_spec(obj)
    if cluster is not None:
        prefix = "spec.rayClusterSpec" if obj["kind"] == "RayJob" else "spec"
        head = cluster.get("headGroupSpec") or {}
        found.append(PodSpec(f"{prefix}.headGroupSpec.template.spec", _get(head, "template", "spec") or {},
                             _get(head, "template", "metadata", "labels") or {}, head))
        for i, worker in enumerate(cluster.get("workerGroupSpecs") or []):
            found.append(PodSpec(f"{prefix}.workerGroupSpecs[{i}].template.spec",
                                 _get(worker, "template", "spec") or {},
                                 _get(worker, "template", "metadata", "labels") or {}, worker))
    if obj.get("kind") == "RayJob" and _get(obj, "spec", "submitterPodTemplate"):
        template = obj["spec"]["submitterPodTemplate"]
        found.append(PodSpec("spec.submitterPodTemplate.spec", template.get("spec") or {},
                             _get(template, "metadata", "labels") or {}))
    return found


def containers(pod: PodSpec) -> list[tuple[str, dict[str, Any]]]:
    return [(f"{pod.where}.{key}[{c.get('name', i)}]", c)
            for key in ("initContainers", "containers") for i, c in enumerate(pod.spec.get(key) or [])]


def cpu_quantity(value: Any) -> float:
    """A CPU quantity (``2``, ``"500m"``, ``"1.5"``) in cores."""
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"not a CPU quantity: {value!r}")
    return float(match.group(1)) / (1000.0 if match.group(2) else 1.0)


# -- checks --------------------------------------------------------------------------------------------

def check_schema(obj: dict[str, Any], kubernetes_version: str = KUBERNETES_VERSION) -> list[Problem]:
    """Schema problems of one object (core: kubernetes-validate --strict; Ray: CRD schema + strict walk)."""
    oid = object_id(obj)
    if crd.is_ray_object(obj):
        problems = [Problem(oid, "schema", m) for m in crd.schema_errors(obj)]
        problems += [Problem(oid, "strict", m) for m in crd.unknown_fields(obj)]
        meta = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": obj.get("metadata") or {}}
        problems += [Problem(oid, "strict", m) for m in _kubernetes_validate(meta, kubernetes_version)]
        return problems
    return [Problem(oid, "schema", m) for m in _kubernetes_validate(obj, kubernetes_version)]


def _kubernetes_validate(obj: dict[str, Any], version: str) -> list[str]:
    try:
        import kubernetes_validate
    except ImportError:
        raise ManifestError("kubernetes-validate is not installed: pip install -e '.[dev]'") from None
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{crd.format_path(exc.path) or '(top)'}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError:
        return [f"no schema for {obj.get('apiVersion')} {obj.get('kind')} in Kubernetes {version}"]
    return []


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
        head_sc = _get(cluster, "headGroupSpec", "template", "spec", "securityContext") or {}
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
    if sc.get("readOnlyRootFilesystem") is not True:
        found.append("readOnlyRootFilesystem is not true")
    image = str(c.get("image", ""))
    if not image.startswith("(") and (not any(kustomize.split_image(image)[1:]) or image.endswith(":latest")):
        found.append(f"image '{image}' is not pinned to a tag or digest")
    for env in c.get("env") or []:
        name = str(env.get("name", ""))
        if "value" in env and SECRET_NAME.search(name):
            found.append(f"env {name} has a plaintext value (use valueFrom.secretKeyRef)")
    texts = [str(e.get("value", "")) for e in c.get("env") or []] + [str(a) for a in
                                                                    (c.get("command") or []) + (c.get("args") or [])]
    if any(URL_PASSWORD.search(t) for t in texts):
        found.append("a URL holds a plaintext password (reference a Secret through $(VAR))")
    return found


def check_secrets(obj: dict[str, Any], placeholders_allowed: bool) -> list[Problem]:
    """Secrets must not still hold the examples' placeholder values (unless examples stood in)."""
    if obj.get("kind") != "Secret" or placeholders_allowed:
        return []
    return [Problem(object_id(obj), "policy", f"data.{key} still holds the example's placeholder")
            for key, value in (obj.get("data") or {}).items()
            if PLACEHOLDER in base64.b64decode(value).decode("utf-8", "replace")]


def check_ray(obj: dict[str, Any], ray_version: str | None) -> list[Problem]:
    """Ray version, autoscaling, GPU groups scaling from zero to a bound, one project image."""
    cluster = ray_cluster_spec(obj)
    if cluster is None:
        return []
    oid = object_id(obj)
    found: list[str] = []
    if ray_version and str(cluster.get("rayVersion")) != ray_version:
        found.append(f"rayVersion {cluster.get('rayVersion')!r} differs from the project's ray {ray_version}")
    if _get(cluster, "headGroupSpec", "rayStartParams", "dashboard-host") != "0.0.0.0":
        found.append("the head's dashboard (Jobs API) does not listen on 0.0.0.0")
    workers = cluster.get("workerGroupSpecs") or []
    for i, group in enumerate(workers):
        name = group.get("groupName", i)
        low, high = group.get("minReplicas"), group.get("maxReplicas")
        if high is None:
            found.append(f"worker group {name}: no maxReplicas")
        elif low is not None and not (0 <= low <= group.get("replicas", low) <= high):
            found.append(f"worker group {name}: need 0 <= minReplicas <= replicas <= maxReplicas")
        if any(GPU_RESOURCE in (_get(c, "resources", kind) or {})
               for c in _get(group, "template", "spec", "containers") or [] for kind in ("requests", "limits")):
            if low != 0:
                found.append(f"GPU worker group {name}: minReplicas must be 0 (GPUs idle otherwise)")
            if not isinstance(high, int) or high < 1:
                found.append(f"GPU worker group {name}: maxReplicas must bound the GPU nodes (>= 1)")
            gpu_limits = [_get(c, "resources", "limits", GPU_RESOURCE)
                          for c in _get(group, "template", "spec", "containers") or []]
            if not any(gpu_limits):
                found.append(f"GPU worker group {name}: {GPU_RESOURCE} must be in limits")
    if any(g.get("minReplicas") != g.get("maxReplicas") for g in workers) \
            and not cluster.get("enableInTreeAutoscaling"):
        found.append("worker groups range between min and max replicas but enableInTreeAutoscaling is off")
    images = {c.get("image") for pod in pod_specs(obj) if pod.group is not None for _, c in containers(pod)}
    if len(images) > 1:
        found.append(f"the Ray pods run different images: {sorted(map(str, images))}")
    return [Problem(oid, "policy", m) for m in found]


def check_references(obj: dict[str, Any], everything: list[dict[str, Any]]) -> list[Problem]:
    """Secret/ConfigMap names and keys used by the pods exist among ``everything`` (same namespace)."""
    namespace = _get(obj, "metadata", "namespace")
    data: dict[tuple[str, str], set[str]] = {}
    for other in everything:
        if other.get("kind") in ("Secret", "ConfigMap") and _get(other, "metadata", "namespace") == namespace:
            keys = set(other.get("data") or {}) | set(other.get("binaryData") or {})
            data[(other["kind"], other["metadata"]["name"])] = keys
    found = []

    def need(kind: str, name: Any, key: Any, where: str) -> None:
        if (kind, name) not in data:
            found.append(f"{where}: {kind} '{name}' does not exist")
        elif key is not None and key not in data[(kind, name)]:
            found.append(f"{where}: {kind} '{name}' has no key '{key}'")

    for pod in pod_specs(obj):
        for volume in pod.spec.get("volumes") or []:
            if "configMap" in volume and not volume["configMap"].get("optional"):
                need("ConfigMap", volume["configMap"].get("name"), None, f"{pod.where}.volumes[{volume['name']}]")
            if "secret" in volume and not volume["secret"].get("optional"):
                need("Secret", volume["secret"].get("secretName"), None, f"{pod.where}.volumes[{volume['name']}]")
        for where, c in containers(pod):
            for env in c.get("env") or []:
                for ref, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                    target = _get(env, "valueFrom", ref)
                    if target and not target.get("optional"):
                        need(kind, target.get("name"), target.get("key"), f"{where}.env[{env.get('name')}]")
            for source in c.get("envFrom") or []:
                for ref, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                    if source.get(ref) and not source[ref].get("optional"):
                        need(kind, source[ref].get("name"), None, f"{where}.envFrom")
    return [Problem(object_id(obj), "references", m) for m in found]


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_network(everything: list[dict[str, Any]]) -> list[Problem]:
    """Services and NetworkPolicy peers select pods that exist; stateful workloads are behind a policy."""
    pods = [(obj, pod) for obj in everything for pod in pod_specs(obj)]
    policies = [o for o in everything if o.get("kind") == "NetworkPolicy"]
    found: list[Problem] = []
    for obj in everything:
        selector = _get(obj, "spec", "selector") if obj.get("kind") == "Service" else None
        if selector and not any(_selects(selector, pod.labels) for _, pod in pods):
            found.append(Problem(object_id(obj), "network", "the selector matches no pod template"))
        if obj.get("kind") in ("Deployment", "StatefulSet"):
            labels = pod_specs(obj)[0].labels
            if not any(_selects(_get(p, "spec", "podSelector", "matchLabels") or {}, labels)
                       and "Ingress" in (_get(p, "spec", "policyTypes") or []) for p in policies):
                found.append(Problem(object_id(obj), "network", "no NetworkPolicy restricts ingress to its pods"))
    for policy in policies:
        if not any(_selects(_get(policy, "spec", "podSelector", "matchLabels") or {}, pod.labels) for _, pod in pods):
            found.append(Problem(object_id(policy), "network", "the podSelector matches no pod template"))
        for i, rule in enumerate(_get(policy, "spec", "ingress") or []):
            for peer in rule.get("from") or []:
                selector = _get(peer, "podSelector", "matchLabels") or {}
                if selector and not any(_selects(selector, pod.labels) for _, pod in pods):
                    found.append(Problem(object_id(policy), "network",
                                         f"spec.ingress[{i}]: no pod template carries {selector}"))
    return found


def check_entrypoint(job: dict[str, Any], everything: list[dict[str, Any]]) -> list[Problem]:
    """A RayJob's entrypoint parses, names a mounted config that validates and fits the cluster."""
    if job.get("kind") != "RayJob":
        return []
    oid = object_id(job)
    text = str(_get(job, "spec", "entrypoint") or "")
    argv = shlex.split(text)
    if argv[:1] != ["sentsweep"]:
        return [Problem(oid, "entrypoint", f"'{text}' does not run sentsweep")]
    args, error = parse_cli(argv[1:])
    if args is None:
        return [Problem(oid, "entrypoint", f"'{text}': {error}")]
    if args.command == "resume":
        return [] if "://" in args.sweep_dir else [
            Problem(oid, "entrypoint", f"resume of '{args.sweep_dir}': a new cluster sees only shared storage")]
    if args.command != "sweep":
        return [Problem(oid, "entrypoint", f"'{text}': a RayJob runs `sentsweep sweep` or `sentsweep resume`")]
    raw, where = _mounted_file(job, everything, args.config)
    if raw is None:
        return [Problem(oid, "entrypoint", where)]
    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import parse_sweep_config
    from sentsweep.yaml_io import apply_overrides

    try:
        loaded = yaml.safe_load(raw)
        if isinstance(loaded, dict):
            loaded = apply_overrides(loaded, args.overrides)
        config = parse_sweep_config(loaded, where)
    except (ConfigError, yaml.YAMLError) as exc:
        return [Problem(oid, "entrypoint", str(exc))]
    found = []
    if (_get(job, "spec", "backoffLimit") or 0) > 0:
        if not args.resume_interrupted:
            found.append(f"'{text}': backoffLimit retries it, but without --resume-interrupted a retry starts "
                         "the sweep over")
        if not config.is_remote_storage:
            found.append(f"{where}: backoffLimit retries on a new cluster, but storage_path "
                         f"'{config.storage_path}' is not shared storage (s3://...)")
        if not config.tracking.uri.startswith(("http://", "https://")):
            found.append(f"{where}: backoffLimit retries on a new cluster, but tracking.uri "
                         f"'{config.tracking.uri}' is not a tracking server")
    if not _fits(ray_cluster_spec(job) or {}, config.resources.cpu, config.resources.gpu):
        found.append(f"{where}: no worker group fits a trial's resources (cpu {config.resources.cpu}, "
                     f"gpu {config.resources.gpu})")
    return [Problem(oid, "entrypoint", m) for m in found]


def parse_cli(argv: Sequence[str]) -> tuple[Any, str]:
    """``sentsweep`` arguments parsed by the real CLI parser: ``(namespace, "")`` or ``(None, error)``."""
    from sentsweep.cli import build_parser  # the check is of the CLI itself; imported only here

    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return build_parser().parse_args(list(argv)), ""
    except SystemExit:
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        return None, lines[-1] if lines else "invalid arguments"


def _mounted_file(job: dict[str, Any], everything: list[dict[str, Any]], path: str) -> tuple[str | None, str]:
    """The text of ``path`` as the head container sees it through a ConfigMap volume, or the error."""
    head = _get(job, "spec", "rayClusterSpec", "headGroupSpec", "template", "spec") or {}
    volumes = {v.get("name"): v for v in head.get("volumes") or []}
    target = PurePosixPath(path)
    for mount in _get(head, "containers", 0, "volumeMounts") or []:
        root = PurePosixPath(mount.get("mountPath", "/"))
        if not target.is_relative_to(root) or target == root:
            continue
        source = _get(volumes.get(mount.get("name")), "configMap")
        if source is None:
            return None, f"{path} is on volume '{mount.get('name')}', which is not a ConfigMap"
        name = source.get("name")
        maps = [o for o in everything if o.get("kind") == "ConfigMap" and _get(o, "metadata", "name") == name
                and _get(o, "metadata", "namespace") == _get(job, "metadata", "namespace")]
        if not maps:
            return None, f"{path}: ConfigMap '{name}' does not exist"
        relative = str(target.relative_to(root))
        keys = {item["path"]: item["key"] for item in source.get("items") or []} or None
        key = keys.get(relative) if keys is not None else relative
        data = maps[0].get("data") or {}
        if key not in data:
            return None, f"{path} is not in ConfigMap '{name}' (it holds {', '.join(sorted(data)) or 'nothing'})"
        return data[key], f"{path} (ConfigMap {name})"
    return None, f"{path} is not on a ConfigMap mounted in the head container"


def _fits(cluster: dict[str, Any], cpu: float, gpu: float) -> bool:
    for group in cluster.get("workerGroupSpecs") or []:
        if not group.get("maxReplicas"):
            continue
        container = _get(group, "template", "spec", "containers", 0) or {}
        limits = _get(container, "resources", "limits") or {}
        params = group.get("rayStartParams") or {}
        try:
            cpus = cpu_quantity(params.get("num-cpus", limits.get("cpu", 0)))
            gpus = float(params.get("num-gpus", limits.get(GPU_RESOURCE, 0)))
        except ValueError:
            continue
        if cpus >= cpu and gpus >= gpu:
            return True
    return False


def project_ray_version() -> str | None:
    """The ``ray`` version the installed sentsweep pins (None when the package metadata is unavailable)."""
    from importlib import metadata

    try:
        requirements = metadata.requires("sentsweep") or []
    except metadata.PackageNotFoundError:
        return None
    for requirement in requirements:
        match = re.match(r"^ray(\[[^\]]*\])?==([\w.]+)", requirement.replace(" ", ""))
        if match:
            return match.group(2)
    return None


def validate_objects(objects: list[dict[str, Any]], *, placeholders_allowed: bool = True,
                     kubernetes_version: str = KUBERNETES_VERSION) -> list[Problem]:
    """Every problem of ``objects`` (the objects of kustomizations deployed together)."""
    ray_version = project_ray_version()
    problems: list[Problem] = []
    for obj in objects:
        problems += check_schema(obj, kubernetes_version)
        problems += check_containers(obj)
        problems += check_secrets(obj, placeholders_allowed)
        problems += check_ray(obj, ray_version)
        problems += check_references(obj, objects)
        problems += check_entrypoint(obj, objects)
    return problems + check_network(objects)


def validate(paths: Sequence[str | Path], engine: str = "auto") -> Report:
    """Render the kustomizations ``paths`` (deployed together) and validate all their objects."""
    rendered = [render(path, engine) for path in paths]
    objects = [obj for r in rendered for obj in r.objects]
    placeholders = any(r.examples_used for r in rendered)
    return Report(rendered, validate_objects(objects, placeholders_allowed=placeholders))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sentsweep.platform.manifests [--engine E] PATH...``: counts per kind, then problems."""
    args = list(sys.argv[1:] if argv is None else argv)
    engine = "auto"
    if args[:1] == ["--engine"] and len(args) > 1:
        engine, args = args[1], args[2:]
    if not args or args[0].startswith("-"):
        print("usage: python -m sentsweep.platform.manifests [--engine auto|kubectl|python] KUSTOMIZATION...\n"
              "  (kustomizations deployed together, e.g. k8s/overlays/local k8s/overlays/local/sweep)",
              file=sys.stderr)
        return 2
    try:
        report = validate(args, engine)
    except SentsweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for r in report.rendered:
        counts = ", ".join(f"{kind} {n}" for kind, n in r.counts.items())
        print(f"{r.path} ({r.engine}): {len(r.objects)} objects: {counts}")
        if r.examples_used:
            print(f"  rendered with the committed examples for: {', '.join(r.examples_used)}")
    for problem in report.problems:
        print(f"  {problem}")
    print("ok: every object validates" if report.ok else f"{len(report.problems)} problem(s)")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
