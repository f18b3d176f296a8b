"""KubeRay's CRD schemas stored in tools/k8s_check/schemas/ and the strict walk made with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.k8s_check import crd

REPO = Path(__file__).resolve().parents[3]
# The shared folder beside the checkout (a clone in /work/main) or beside its worktrees' folder.
SHARED_CRDS = next((p / "shared" / "schemas" / f"kuberay-{crd.KUBERAY_VERSION}" for p in (REPO.parent, REPO.parents[1])
                    if (p / "shared" / "schemas").is_dir()), REPO.parent / "shared" / "schemas")


def test_stored_crd_schemas_are_kuberays() -> None:
    if not SHARED_CRDS.is_dir():
        pytest.skip(f"KubeRay CRDs not found at {SHARED_CRDS}")
    files = [SHARED_CRDS / "rayclusters.yaml", SHARED_CRDS / "rayjobs.yaml"]
    assert json.loads(crd.SCHEMA_FILE.read_text()) == crd.extract_schemas(files)


def test_unknown_fields_name_the_closest_known_one() -> None:
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"},
           "spec": {"entrypoint": "x", "shutdownAfterJobFinish": True,
                    "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "tmplate": {}}}}}
    assert crd.is_ray_object(job)
    assert crd.unknown_fields(job) == [
        "spec.shutdownAfterJobFinish: unknown field (did you mean 'shutdownAfterJobFinishes'?)",
        "spec.rayClusterSpec.headGroupSpec.tmplate: unknown field (did you mean 'template'?)",
    ]
