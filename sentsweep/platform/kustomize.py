"""Render a kustomization the way ``kubectl kustomize`` does, for the subset of kustomize ``k8s/`` uses.

>>> objects = build("k8s/overlays/local")                  # doctest: +SKIP
>>> objects == build_with_kubectl("k8s/overlays/local")     # doctest: +SKIP
True

Validating the manifests must not depend on a kubectl binary (CI has package registries only), so this
module reimplements the part of kustomize v5 the project uses, and refuses anything else with
:class:`KustomizeError` rather than render it differently:

- ``resources`` (files, and folders holding a kustomization), ``namespace``, ``labels`` (metadata only),
- ``configMapGenerator`` / ``secretGenerator`` (``files``, ``literals``, ``envs``; ``options`` and
  ``generatorOptions``: ``disableNameSuffixHash``, ``labels``, ``annotations``, ``immutable``) with
  kustomize's content-hash suffix, computed as its hasher does (note: its ``metadata/name`` lookup
  yields an empty name, so the name is not part of the hash),
- ``patches`` holding JSON 6902 operations (``path`` or inline ``patch``, with a ``target``),
- ``images`` (every ``containers``/``initContainers`` image at any depth, as kustomize does),
- ``configurations`` with ``nameReference`` entries, plus the builtin references from pod specs of the
  core workload kinds to ConfigMaps and Secrets.

Transformers run in kustomize's order (patches, namespace, labels, images); hash suffixes are added and
references to the renamed objects rewritten once, after the whole tree is built. As kustomize's default
load restrictor does, a kustomization reads files only from its own folder or below.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sentsweep.errors import SentsweepError

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUPPORTED_FIELDS = frozenset({
    "apiVersion", "kind", "namespace", "labels", "resources", "configMapGenerator", "secretGenerator",
    "generatorOptions", "patches", "images", "configurations",
})
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition", "PriorityClass", "IngressClass", "RuntimeClass", "APIService",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "CSIDriver", "VolumeAttachment",
})
# Kinds whose namespace handling in kustomize goes beyond setting metadata.namespace.
_NAMESPACE_SPECIAL_KINDS = frozenset({"RoleBinding", "ClusterRoleBinding", "ServiceAccount"})
WORKLOAD_POD_SPECS = {
    ("", "Pod"): "spec",
    ("", "PodTemplate"): "template/spec",
    ("apps", "Deployment"): "spec/template/spec",
    ("apps", "StatefulSet"): "spec/template/spec",
    ("apps", "DaemonSet"): "spec/template/spec",
    ("apps", "ReplicaSet"): "spec/template/spec",
    ("", "ReplicationController"): "spec/template/spec",
    ("batch", "Job"): "spec/template/spec",
    ("batch", "CronJob"): "spec/jobTemplate/spec/template/spec",
}
_REFERENCE_SUFFIXES = {
    "ConfigMap": ("volumes/configMap/name", "volumes/projected/sources/configMap/name",
                  "containers/env/valueFrom/configMapKeyRef/name",
                  "initContainers/env/valueFrom/configMapKeyRef/name",
                  "containers/envFrom/configMapRef/name", "initContainers/envFrom/configMapRef/name"),
    "Secret": ("volumes/secret/secretName", "volumes/projected/sources/secret/name",
               "containers/env/valueFrom/secretKeyRef/name", "initContainers/env/valueFrom/secretKeyRef/name",
               "containers/envFrom/secretRef/name", "initContainers/envFrom/secretRef/name",
               "imagePullSecrets/name"),
}
_ENV_KEY = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


class KustomizeError(SentsweepError):
    """A kustomization is invalid, or uses a feature the Python renderer does not implement."""


@dataclass(frozen=True)
class FieldSpec:
    """Where an object names another: a slash path (lists traversed) in objects of ``kind`` (and group)."""

    kind: str
    path: str
    group: str | None = None

    def matches(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == self.kind and (self.group is None or api_group(obj) == self.group)


@dataclass
class _Resource:
    obj: dict[str, Any]
    original_name: str
    needs_hash: bool = False


@dataclass
class _Build:
    resources: list[_Resource] = field(default_factory=list)
    references: dict[str, list[FieldSpec]] = field(default_factory=dict)  # referral kind -> specs


def api_group(obj: dict[str, Any]) -> str:
    """The API group of an object ('' for the core group)."""
    api_version = str(obj.get("apiVersion", ""))
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def builtin_references() -> dict[str, list[FieldSpec]]:
    """kustomize's builtin references from the pod specs of core workloads to ConfigMaps and Secrets."""
    refs: dict[str, list[FieldSpec]] = {}
    for referral, suffixes in _REFERENCE_SUFFIXES.items():
        refs[referral] = [FieldSpec(kind, f"{prefix}/{suffix}", group)
                          for (group, kind), prefix in WORKLOAD_POD_SPECS.items() for suffix in suffixes]
    return refs


def find_kustomization(folder: Path) -> Path:
    """The kustomization file of ``folder``."""
    for name in KUSTOMIZATION_NAMES:
        if (folder / name).is_file():
            return folder / name
    raise KustomizeError(f"{folder}: no kustomization.yaml")


def build(path: str | Path) -> list[dict[str, Any]]:
    """Render the kustomization in folder ``path``: the objects ``kubectl kustomize`` would print."""
    root = Path(path).resolve()
    built = _accumulate(root, stack=())
    _add_hashes(built.resources)
    _fix_references(built.resources, built.references)
    return [r.obj for r in built.resources]


def kubectl_available() -> bool:
    return shutil.which("kubectl") is not None


def build_with_kubectl(path: str | Path, timeout: float = 60.0) -> list[dict[str, Any]]:
    """``kubectl kustomize path``, parsed (raises :class:`KustomizeError` with kubectl's message)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise KustomizeError("kubectl is not on PATH")
    done = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True, timeout=timeout,
                          check=False)
    if done.returncode != 0:
        raise KustomizeError(f"kubectl kustomize {path}: {done.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


# -- accumulation --------------------------------------------------------------------------------------

def _accumulate(folder: Path, stack: tuple[Path, ...]) -> _Build:
    if folder in stack:
        raise KustomizeError(f"{folder}: kustomization cycle through {' -> '.join(map(str, stack))}")
    kfile = find_kustomization(folder)
    spec = _load_mapping(kfile)
    unknown = sorted(set(spec) - SUPPORTED_FIELDS)
    if unknown:
        raise KustomizeError(f"{kfile}: '{unknown[0]}' is not supported by the Python renderer "
                             "(render with kubectl, or extend sentsweep.platform.kustomize)")
    built = _Build(references=builtin_references())
    for entry in _list(spec, "resources", kfile):
        target = (folder / entry).resolve()
        if target.is_dir():
            sub = _accumulate(target, (*stack, folder))
            built.resources.extend(sub.resources)
            _merge_references(built.references, sub.references)
        else:
            _check_inside(folder, target, kfile)
            built.resources.extend(_Resource(obj, _name(obj, target)) for obj in _load_objects(target))
    options = spec.get("generatorOptions") or {}
    for gen in _list(spec, "configMapGenerator", kfile):
        built.resources.append(_generate("ConfigMap", gen, options, folder, kfile))
    for gen in _list(spec, "secretGenerator", kfile):
        built.resources.append(_generate("Secret", gen, options, folder, kfile))
    _check_unique(built.resources, kfile)
    for entry in _list(spec, "configurations", kfile):
        cfile = (folder / entry).resolve()
        _check_inside(folder, cfile, kfile)
        _merge_references(built.references, _load_configuration(cfile))
    objects = [r.obj for r in built.resources]
    for patch in _list(spec, "patches", kfile):
        _apply_patch(patch, objects, folder, kfile)
    if spec.get("namespace"):
        _set_namespace(objects, str(spec["namespace"]), kfile)
    for entry in _list(spec, "labels", kfile):
        _add_labels(objects, entry, kfile)
    for entry in _list(spec, "images", kfile):
        _set_images(objects, entry, kfile)
    return built


def _load_mapping(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise KustomizeError(f"{path}: expected a mapping")
    return loaded


def _load_objects(path: Path) -> list[dict[str, Any]]:
    try:
        docs = [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]
    except yaml.YAMLError as exc:
        raise KustomizeError(f"{path}: invalid YAML: {exc}") from None
    for doc in docs:
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise KustomizeError(f"{path}: every document needs apiVersion and kind")
        if doc["kind"].endswith("List"):
            raise KustomizeError(f"{path}: List objects are not supported by the Python renderer")
    return docs


def _list(spec: dict[str, Any], key: str, kfile: Path) -> list[Any]:
    value = spec.get(key) or []
    if not isinstance(value, list):
        raise KustomizeError(f"{kfile}: '{key}' must be a list")
    return value


def _name(obj: dict[str, Any], source: Path) -> str:
    name = (obj.get("metadata") or {}).get("name")
    if not name:
        raise KustomizeError(f"{source}: a {obj.get('kind')} has no metadata.name")
    return str(name)


def _check_inside(folder: Path, target: Path, kfile: Path) -> None:
    if not target.is_relative_to(folder):
        raise KustomizeError(f"{kfile}: security; file '{target}' is not in or below '{folder}'")
    if not target.is_file():
        raise KustomizeError(f"{kfile}: file '{target}' not found")


def _check_unique(resources: list[_Resource], kfile: Path) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for r in resources:
        key = (api_group(r.obj), r.obj["kind"], str(r.obj["metadata"].get("namespace", "")), r.original_name)
        if key in seen:
            raise KustomizeError(f"{kfile}: two resources with the id {key[1]}/{key[3]}")
        seen.add(key)


def _merge_references(into: dict[str, list[FieldSpec]], other: dict[str, list[FieldSpec]]) -> None:
    for kind, specs in other.items():
        known = into.setdefault(kind, [])
        known.extend(s for s in specs if s not in known)


def _load_configuration(path: Path) -> dict[str, list[FieldSpec]]:
    spec = _load_mapping(path)
    unknown = sorted(set(spec) - {"nameReference"})
    if unknown:
        raise KustomizeError(f"{path}: transformer configuration '{unknown[0]}' is not supported")
    refs: dict[str, list[FieldSpec]] = {}
    for entry in spec.get("nameReference") or []:
        specs = [FieldSpec(fs["kind"], fs["path"], fs.get("group")) for fs in entry.get("fieldSpecs") or []]
        refs.setdefault(entry["kind"], []).extend(specs)
    return refs


# -- generators ----------------------------------------------------------------------------------------

def _generate(kind: str, gen: dict[str, Any], global_options: dict[str, Any], folder: Path,
              kfile: Path) -> _Resource:
    name = gen.get("name")
    if not name:
        raise KustomizeError(f"{kfile}: a {kind} generator needs a name")
    if gen.get("behavior", "create") != "create":
        raise KustomizeError(f"{kfile}: generator behavior '{gen['behavior']}' is not supported")
    unknown = sorted(set(gen) - {"name", "namespace", "behavior", "files", "literals", "envs", "options", "type"})
    if unknown:
        raise KustomizeError(f"{kfile}: generator field '{unknown[0]}' is not supported")
    data: dict[str, str] = {}
    binary: dict[str, str] = {}
    for env in gen.get("envs") or []:
        path = (folder / env).resolve()
        _check_inside(folder, path, kfile)
        for key, value in parse_env_file(path.read_bytes(), path):
            _put(data, key, value, kfile)
    for literal in gen.get("literals") or []:
        key, sep, value = str(literal).partition("=")
        if not sep:
            raise KustomizeError(f"{kfile}: literal '{literal}' is not key=value")
        _put(data, key, _unquote(value), kfile)
    for entry in gen.get("files") or []:
        key, sep, rel = str(entry).partition("=")
        if not sep:
            key, rel = Path(entry).name, entry
        path = (folder / rel).resolve()
        _check_inside(folder, path, kfile)
        raw = path.read_bytes()
        try:
            _put(data, key, raw.decode("utf-8"), kfile)
        except UnicodeDecodeError:
            _put(binary, key, base64.b64encode(raw).decode("ascii"), kfile)
    options = {**global_options, **(gen.get("options") or {})}
    unknown = sorted(set(options) - {"disableNameSuffixHash", "labels", "annotations", "immutable"})
    if unknown:
        raise KustomizeError(f"{kfile}: generator option '{unknown[0]}' is not supported")
    metadata: dict[str, Any] = {"name": str(name)}
    if gen.get("namespace"):
        metadata["namespace"] = str(gen["namespace"])
    if options.get("labels"):
        metadata["labels"] = {str(k): str(v) for k, v in options["labels"].items()}
    if options.get("annotations"):
        metadata["annotations"] = {str(k): str(v) for k, v in options["annotations"].items()}
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    if kind == "Secret":
        obj["type"] = str(gen.get("type") or "Opaque")
        data = {k: base64.b64encode(v.encode("utf-8")).decode("ascii") for k, v in data.items()}
        data.update(binary)
        binary = {}
    elif gen.get("type"):
        raise KustomizeError(f"{kfile}: 'type' is for secretGenerator only")
    if data:
        obj["data"] = data
    if binary:
        obj["binaryData"] = binary
    if options.get("immutable"):
        obj["immutable"] = True
    return _Resource(obj, str(name), needs_hash=not options.get("disableNameSuffixHash", False))


def parse_env_file(content: bytes, source: Path | str = "env file") -> list[tuple[str, str]]:
    """``KEY=VALUE`` lines as kustomize reads them: leading blanks trimmed, ``#`` comments and empty lines
    skipped, the value kept verbatim (no quote handling); a line without ``=`` is refused here (kustomize
    would read the value from its own environment)."""
    pairs = []
    for number, raw in enumerate(content.split(b"\n"), start=1):
        raw = raw.removesuffix(b"\r")
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            line = raw.decode("utf-8").lstrip()
        except UnicodeDecodeError:
            raise KustomizeError(f"{source}:{number}: invalid UTF-8") from None
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not _ENV_KEY.match(key):
            raise KustomizeError(f"{source}:{number}: '{key}' is not a valid key name")
        if not sep:
            raise KustomizeError(f"{source}:{number}: '{key}' has no value (KEY=VALUE expected)")
        pairs.append((key, value))
    return pairs


def _put(data: dict[str, str], key: str, value: str, kfile: Path) -> None:
    if key in data:
        raise KustomizeError(f"{kfile}: generator key '{key}' given twice")
    data[key] = value


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def content_hash(obj: dict[str, Any]) -> str:
    """kustomize's name suffix for a generated ConfigMap or Secret (``hasher.Hash``)."""
    if obj["kind"] == "ConfigMap":
        encoded: dict[str, Any] = {"kind": "ConfigMap", "name": "", "data": obj.get("data", "")}
        if obj.get("binaryData"):
            encoded["binaryData"] = obj["binaryData"]
    elif obj["kind"] == "Secret":
        encoded = {"kind": "Secret", "type": obj.get("type", ""), "name": "", "data": obj.get("data", "")}
        if obj.get("stringData"):
            encoded["stringData"] = obj["stringData"]
    else:
        raise KustomizeError(f"no content hash for kind {obj['kind']}")
    digest = hashlib.sha256(_go_json(encoded).encode("utf-8")).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def _go_json(value: Any) -> str:
    """JSON as Go's ``json.Marshal`` writes it: sorted keys, no spaces, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


# -- transformers --------------------------------------------------------------------------------------

def _apply_patch(entry: dict[str, Any], objects: list[dict[str, Any]], folder: Path, kfile: Path) -> None:
    unknown = sorted(set(entry) - {"path", "patch", "target", "options"})
    if unknown or entry.get("options"):
        raise KustomizeError(f"{kfile}: patch field '{(unknown or ['options'])[0]}' is not supported")
    if "path" in entry:
        path = (folder / entry["path"]).resolve()
        _check_inside(folder, path, kfile)
        source, text = str(path), path.read_text(encoding="utf-8")
    elif "patch" in entry:
        source, text = f"{kfile} (inline patch)", str(entry["patch"])
    else:
        raise KustomizeError(f"{kfile}: a patch needs 'path' or 'patch'")
    ops = yaml.safe_load(text)
    if not isinstance(ops, list):
        raise KustomizeError(f"{source}: only JSON 6902 patches (a list of operations) are supported by the "
                             "Python renderer")
    target = entry.get("target")
    if not isinstance(target, dict) or not target:
        raise KustomizeError(f"{kfile}: a JSON 6902 patch needs a target")
    unknown = sorted(set(target) - {"group", "version", "kind", "name", "namespace"})
    if unknown:
        raise KustomizeError(f"{kfile}: patch target field '{unknown[0]}' is not supported")
    for obj in objects:
        if _selected(obj, target):
            try:
                patched = apply_json_patch(obj, ops)
            except KustomizeError as exc:
                raise KustomizeError(f"{source} on {obj['kind']}/{obj['metadata']['name']}: {exc}") from None
            obj.clear()
            obj.update(patched)  # in place: the accumulated resources hold this very mapping


def _selected(obj: dict[str, Any], target: dict[str, Any]) -> bool:
    version = str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
    checks = (("group", api_group(obj)), ("version", version), ("kind", obj.get("kind")))
    if any(key in target and str(target[key]) != value for key, value in checks):
        return False
    meta = obj.get("metadata") or {}
    if "name" in target and not re.fullmatch(str(target["name"]), str(meta.get("name", ""))):
        return False
    return "namespace" not in target or bool(re.fullmatch(str(target["namespace"]), str(meta.get("namespace", ""))))


def apply_json_patch(document: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``document`` with RFC 6902 ``operations`` applied (add, remove, replace, test, move, copy)."""
    doc = copy.deepcopy(document)
    for op in operations:
        kind = op.get("op")
        path = _pointer(op.get("path", ""))
        if kind == "test":
            if _get(doc, path) != op.get("value"):
                raise KustomizeError(f"test failed at {op['path']}")
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "add":
            _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "replace":
            _get(doc, path)
            _remove(doc, path)
            _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = copy.deepcopy(_get(doc, source))
            if kind == "move":
                _remove(doc, source)
            _add(doc, path, value)
        else:
            raise KustomizeError(f"unknown JSON patch op '{kind}'")
    return doc


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise KustomizeError(f"JSON pointer '{text}' must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/")]


def _parent(doc: Any, path: list[str]) -> tuple[Any, str]:
    if not path:
        raise KustomizeError("operations on the whole document are not supported")
    return _get(doc, path[:-1]), path[-1]


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KustomizeError(f"path /{'/'.join(path)} does not exist")
    return node


def _remove(doc: Any, path: list[str]) -> None:
    parent, last = _parent(doc, path)
    _get(doc, path)
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]


def _add(doc: Any, path: list[str], value: Any) -> None:
    parent, last = _parent(doc, path)
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-":
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent):
            parent.insert(int(last), value)
        else:
            raise KustomizeError(f"index {last} out of range at /{'/'.join(path)}")
    else:
        raise KustomizeError(f"cannot add below a scalar at /{'/'.join(path)}")


def _set_namespace(objects: list[dict[str, Any]], namespace: str, kfile: Path) -> None:
    for obj in objects:
        kind = obj["kind"]
        if kind in _NAMESPACE_SPECIAL_KINDS:
            raise KustomizeError(f"{kfile}: the namespace of a {kind} is not handled by the Python renderer")
        if kind == "Namespace":
            if obj["metadata"]["name"] != namespace:
                raise KustomizeError(f"{kfile}: Namespace '{obj['metadata']['name']}' differs from the "
                                     f"kustomization's namespace '{namespace}'")
            continue
        if kind not in CLUSTER_SCOPED_KINDS:
            obj["metadata"]["namespace"] = namespace


def _add_labels(objects: list[dict[str, Any]], entry: dict[str, Any], kfile: Path) -> None:
    if entry.get("includeSelectors") or entry.get("includeTemplates") or entry.get("fields"):
        raise KustomizeError(f"{kfile}: labels with includeSelectors, includeTemplates or fields are not "
                             "supported by the Python renderer")
    pairs = {str(k): str(v) for k, v in (entry.get("pairs") or {}).items()}
    for obj in objects:
        obj["metadata"].setdefault("labels", {}).update(pairs)


def _set_images(objects: list[dict[str, Any]], entry: dict[str, Any], kfile: Path) -> None:
    name = entry.get("name")
    if not name:
        raise KustomizeError(f"{kfile}: an images entry needs a name")
    pattern = re.compile("^" + str(name) + r"(@sha256)?(:[\w][\w.-]{0,127})?$")
    for obj in objects:
        for container in _containers(obj):
            image = container.get("image")
            if isinstance(image, str) and pattern.match(image):
                container["image"] = _new_image(image, entry)


def _containers(node: Any) -> list[dict[str, Any]]:
    """Every container mapping under a ``containers`` or ``initContainers`` list, at any depth."""
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                found.extend(c for c in value if isinstance(c, dict))
            found.extend(_containers(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_containers(item))
    return found


def split_image(image: str) -> tuple[str, str, str]:
    """``(name, tag, digest)`` of an image reference (a registry port is not taken for a tag)."""
    name, _, digest = image.partition("@")
    slash = name.find("/")
    colon = name.rfind(":")
    if colon > max(slash, 0) or (slash < 0 and colon >= 0):
        return name[:colon], name[colon + 1:], digest
    return name, "", digest


def _new_image(image: str, entry: dict[str, Any]) -> str:
    name, tag, digest = split_image(image)
    name = str(entry.get("newName") or name)
    if entry.get("digest"):
        return f"{name}@{entry['digest']}"
    if entry.get("newTag"):
        return f"{name}:{entry['newTag']}"
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


# -- names ---------------------------------------------------------------------------------------------

def _add_hashes(resources: list[_Resource]) -> None:
    for r in resources:
        if r.needs_hash:
            r.obj["metadata"]["name"] = f"{r.original_name}-{content_hash(r.obj)}"


def _fix_references(resources: list[_Resource], references: dict[str, list[FieldSpec]]) -> None:
    renamed = [r for r in resources if r.obj["metadata"]["name"] != r.original_name]
    for referral in renamed:
        specs = references.get(referral.obj["kind"], [])
        namespace = referral.obj["metadata"].get("namespace")
        for r in resources:
            if r.obj["metadata"].get("namespace") != namespace:
                continue
            for spec in specs:
                if spec.matches(r.obj):
                    _rename_at(r.obj, spec.path.split("/"), referral.original_name, referral.obj["metadata"]["name"])


def _rename_at(node: Any, path: list[str], old: str, new: str) -> None:
    if isinstance(node, list):
        for item in node:
            _rename_at(item, path, old, new)
        return
    if not isinstance(node, dict) or not path or path[0] not in node:
        return
    if len(path) == 1:
        if node[path[0]] == old:
            node[path[0]] = new
        return
    _rename_at(node[path[0]], path[1:], old, new)
