"""KubeRay's CRD schemas (RayCluster, RayJob), stored in ``schemas/``, and the two checks made with them.

The schemas are the ``openAPIV3Schema`` of the served ``ray.io/v1`` version in KubeRay's CRDs
(``ray-operator/config/crd/bases``), stored in ``schemas/kuberay-<version>.json`` with the RayCluster
spec, which a RayJob embeds as ``spec.rayClusterSpec``, stored once. Regenerate the file from the CRDs
of a new KubeRay release with::

    python -m tools.k8s_check.crd rayclusters.yaml rayjobs.yaml

:func:`schema_errors` validates an object with jsonschema (what the API server's structural checks
do, less the CEL rules). The CRDs do not set ``additionalProperties: false``, so a misspelled field
passes that; :func:`unknown_fields` walks the schema and reports every field it does not name.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

KUBERAY_VERSION = "v1.7.0"
SCHEMA_FILE = Path(__file__).with_name("schemas") / f"kuberay-{KUBERAY_VERSION}.json"
API_VERSION = "ray.io/v1"
_SHARED_SPEC = "RayClusterSpec"
_REF = {"$ref": f"#/definitions/{_SHARED_SPEC}"}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: the CRDs are 2 MB


def extract_schemas(crd_files: Iterable[str | Path], version: str = "v1") -> dict[str, Any]:
    """The stored form of the CRDs' ``version`` schemas: ``{"kinds": {...}, "definitions": {...}}``."""
    kinds: dict[str, Any] = {}
    for path in crd_files:
        crd = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_LOADER)
        served = [v for v in crd["spec"]["versions"] if v["name"] == version]
        if not served:
            raise ValueError(f"{path}: no version {version}")
        kinds[crd["spec"]["names"]["kind"]] = served[0]["schema"]["openAPIV3Schema"]
    if set(kinds) != {"RayCluster", "RayJob"}:
        raise ValueError(f"expected the RayCluster and RayJob CRDs, got {sorted(kinds)}")
    shared = kinds["RayCluster"]["properties"]["spec"]
    job_spec = kinds["RayJob"]["properties"]["spec"]["properties"]
    if job_spec["rayClusterSpec"] != shared:
        raise ValueError("RayJob.spec.rayClusterSpec differs from RayCluster.spec; store them apart")
    kinds = copy.deepcopy(kinds)
    kinds["RayCluster"]["properties"]["spec"] = dict(_REF)
    kinds["RayJob"]["properties"]["spec"]["properties"]["rayClusterSpec"] = dict(_REF)
    return {"kuberay": KUBERAY_VERSION, "apiVersion": API_VERSION, "kinds": kinds,
            "definitions": {_SHARED_SPEC: shared}}


def write_schemas(crd_files: Sequence[str | Path], dest: str | Path = SCHEMA_FILE) -> Path:
    """Write :func:`extract_schemas` of ``crd_files`` to ``dest`` (compact, keys sorted)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(extract_schemas(crd_files), sort_keys=True, separators=(",", ":")) + "\n")
    return dest


@functools.cache
def load_schemas() -> dict[str, dict[str, Any]]:
    """Kind -> ``openAPIV3Schema`` for the stored KubeRay CRDs (references inlined)."""
    packed = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    definitions = packed["definitions"]

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"$ref"}:
                return definitions[node["$ref"].rsplit("/", 1)[-1]]
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return {kind: inline(schema) for kind, schema in packed["kinds"].items()}


def is_ray_object(obj: dict[str, Any]) -> bool:
    return obj.get("apiVersion") == API_VERSION and obj.get("kind") in load_schemas()


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Where ``obj`` breaks its CRD schema: ``"spec.workerGroupSpecs[0]: 'maxReplicas' is a required ..."``."""
    import jsonschema

    validator = jsonschema.Draft4Validator(load_schemas()[obj["kind"]])
    errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{format_path(e.absolute_path) or '(top)'}: {e.message}" for e in errors]


def unknown_fields(obj: dict[str, Any]) -> list[str]:
    """Fields of ``obj`` its CRD schema does not name (each with the closest name it does)."""
    return _walk(obj, load_schemas()[obj["kind"]], [])


def _walk(value: Any, schema: dict[str, Any], path: list[str | int]) -> list[str]:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            if properties is not None and key in properties:
                found.extend(_walk(child, properties[key], [*path, key]))
            elif isinstance(additional, dict):
                found.extend(_walk(child, additional, [*path, key]))
            elif properties is not None or additional is False:
                close = difflib.get_close_matches(key, list(properties or ()), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                found.append(f"{format_path([*path, key])}: unknown field{hint}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found.extend(_walk(item, schema["items"], [*path, index]))
    return found


def format_path(path: Iterable[str | int]) -> str:
    """``spec.workerGroupSpecs[0].maxReplicas`` from path elements."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m tools.k8s_check.crd RAYCLUSTERS_CRD.yaml RAYJOBS_CRD.yaml", file=sys.stderr)
        return 2
    print(f"wrote {write_schemas(args)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
