"""The Kubernetes manifests (k8s/), rendered with kubectl and validated offline; planted mistakes must be caught.

Planted mistakes are made in a copy of k8s/ and go through the whole pipeline (render, schema, policy,
entrypoint); each test checks that exactly the planted problem appears.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentsweep.platform.config import parse_sweep_config
from tools import k8s_check
from tools.k8s_check.policy import project_ray_version

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "k8s"
OVERLAYS = ("local", "gpu")
KUSTOMIZATIONS = ("overlays/local", "overlays/local/sweep", "overlays/gpu", "overlays/gpu/sweep")


@pytest.fixture(scope="module")
def rendered() -> dict[str, k8s_check.Rendered]:
    return {path: k8s_check.render(K8S / path) for path in KUSTOMIZATIONS}


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_object_of_the_overlay_validates(overlay: str, rendered: dict[str, k8s_check.Rendered]) -> None:
    platform, sweep = rendered[f"overlays/{overlay}"], rendered[f"overlays/{overlay}/sweep"]
    assert platform.objects and sweep.objects  # the counts per kind: test_kubectl.py
    problems = k8s_check.validate_objects(platform.objects + sweep.objects)
    assert [str(p) for p in problems] == []


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_rayjob_cluster_is_the_raycluster(overlay: str, rendered: dict[str, k8s_check.Rendered]) -> None:
    """k8s/sweep/rayjob.yaml repeats k8s/base/raycluster.yaml (and the overlays their patches): only the
    configs mount on the head may differ."""
    cluster = _one(rendered[f"overlays/{overlay}"].objects, "RayCluster")["spec"]
    job = json.loads(json.dumps(_one(rendered[f"overlays/{overlay}/sweep"].objects, "RayJob")))
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    assert [v["name"] for v in head["volumes"]][-1] == "configs"
    head["volumes"].pop()
    assert head["containers"][0]["volumeMounts"].pop()["mountPath"] == "/configs"
    assert job["spec"]["rayClusterSpec"] == cluster


def test_overlay_shapes(rendered: dict[str, k8s_check.Rendered]) -> None:
    local = _one(rendered["overlays/local"].objects, "RayCluster")["spec"]
    gpu = _one(rendered["overlays/gpu"].objects, "RayCluster")["spec"]
    assert [g["groupName"] for g in local["workerGroupSpecs"]] == ["cpu"]
    assert "nvidia.com/gpu" not in json.dumps(local)
    group = gpu["workerGroupSpecs"][0]
    assert (group["groupName"], group["minReplicas"], group["maxReplicas"]) == ("gpu", 0, 8)
    assert group["template"]["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert gpu["enableInTreeAutoscaling"] is True and gpu["rayVersion"] == project_ray_version()
    job = _one(rendered["overlays/gpu/sweep"].objects, "RayJob")["spec"]
    assert job["entrypoint"] == "sentsweep sweep /configs/paper-cosent-stsb.yaml --resume-interrupted"
    assert job["shutdownAfterJobFinishes"] is True and job["backoffLimit"] > 0


def test_cluster_configs_differ_from_the_repo_configs_only_where_they_must() -> None:
    cluster_only = {"storage_path", "storage_endpoint_url", "tracking"}
    configs = sorted((K8S / "sweep" / "configs").glob("*.yaml"))
    listed = yaml.safe_load((K8S / "sweep" / "kustomization.yaml").read_text())["configMapGenerator"][0]["files"]
    assert sorted(listed) == [f"configs/{p.name}" for p in configs]
    for path in configs:
        ours = parse_sweep_config(yaml.safe_load(path.read_text()), path).model_dump()
        theirs = parse_sweep_config(yaml.safe_load((REPO / "configs" / path.name).read_text()), path).model_dump()
        assert {k: v for k, v in ours.items() if k not in cluster_only} == \
               {k: v for k, v in theirs.items() if k not in cluster_only}, path.name
        assert ours["storage_path"].startswith("s3://") and ours["tracking"]["uri"].startswith("http://mlflow.")


# -- planted mistakes ----------------------------------------------------------------------------------

def _planted(tmp_path: Path, paths: tuple[str, ...], edits: dict[str, tuple[str, str]]) -> list[str]:
    """The problems a copy of k8s/ with ``edits`` (file -> (old, new), each old found once) has and the
    unchanged tree has not."""
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy, ignore=shutil.ignore_patterns("*.env"))
    for rel, (old, new) in edits.items():
        text = (copy / rel).read_text()
        assert text.count(old) == 1, f"{old!r} must occur once in {rel}"
        (copy / rel).write_text(text.replace(old, new))
    return sorted(_problems(copy, paths) - _problems(K8S, paths))


@functools.cache
def _problems(root: Path, paths: tuple[str, ...]) -> frozenset[str]:
    report = k8s_check.validate([root / p for p in paths])
    return frozenset(str(p) for p in report.problems)


def test_a_misspelled_raycluster_field_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/gpu",),
                   {"base/raycluster.yaml": ("enableInTreeAutoscaling: true", "enableInTreeAutoscalling: true")})
    assert any("[strict]" in p and "spec.enableInTreeAutoscalling: unknown field (did you mean "
               "'enableInTreeAutoscaling'?)" in p for p in new), new
    assert all("RayCluster/sentsweep" in p and "utoscal" in p for p in new), new


def test_a_missing_max_replicas_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("base",), {"base/raycluster.yaml": ("\n    maxReplicas: 2\n", "\n")})
    assert "RayCluster/sentsweep: spec.workerGroupSpecs[1]: 'maxReplicas' is a required property [schema]" in new
    assert "RayCluster/sentsweep: worker group cpu: no maxReplicas [policy]" in new
    assert all("maxReplicas" in p for p in new), new


def test_a_gpu_group_that_never_scales_to_zero_is_caught(tmp_path: Path) -> None:
    text = "- groupName: gpu\n    replicas: 0\n    minReplicas: 0"
    new = _planted(tmp_path, ("overlays/gpu",),
                   {"base/raycluster.yaml": (text, text.replace("minReplicas: 0", "minReplicas: 1"))})
    assert "RayCluster/sentsweep: GPU worker group gpu: minReplicas must be 0 (GPUs idle otherwise) [policy]" in new


def test_a_plaintext_password_in_a_deployment_is_caught(tmp_path: Path) -> None:
    env = "        env:\n"
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (
        env, env + "        - name: MLFLOW_DB_PASSWORD\n          value: hunter2\n")})
    assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: env MLFLOW_DB_PASSWORD has a "
                   "plaintext value (use valueFrom.secretKeyRef) [policy]"]


def test_a_password_in_a_url_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/mlflow.yaml": (
        "postgresql://$(PG_USER):$(PG_PASSWORD)@postgres:5432/mlflow\n",
        "postgresql://mlflow:hunter2@postgres:5432/mlflow\n")})
    assert new == ["Deployment/mlflow: spec.template.spec.containers[mlflow]: a URL holds a plaintext password "
                   "(reference a Secret through $(VAR)) [policy]"]


def test_an_entrypoint_naming_a_missing_config_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/gpu", "overlays/gpu/sweep"), {"overlays/gpu/sweep/rayjob.yaml": (
        "/configs/paper-cosent-stsb.yaml", "/configs/paper-cosent-stsbb.yaml")})
    assert len(new) == 1 and new[0].startswith("RayJob/sweep: /configs/paper-cosent-stsbb.yaml is not in "
                                               "ConfigMap 'sweep-configs-"), new


def test_an_entrypoint_the_cli_rejects_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/rayjob.yaml": (
        "demo.yaml --resume-interrupted\n", "demo.yaml --resume-interrupted --fast\n")})
    assert new == ["RayJob/sweep: 'sentsweep sweep /configs/demo.yaml --resume-interrupted --fast': sentsweep: "
                   "error: unrecognized arguments: --fast [entrypoint]"]


def test_a_retry_that_would_start_the_sweep_over_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/rayjob.yaml": (
        "demo.yaml --resume-interrupted\n", "demo.yaml\n")})
    assert new == ["RayJob/sweep: 'sentsweep sweep /configs/demo.yaml': backoffLimit retries it, but without "
                   "--resume-interrupted a retry starts the sweep over [entrypoint]"]


def test_an_invalid_or_unplaceable_sweep_config_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/configs/demo.yaml": (
        "num_samples: 8", "num_samples: 0")})
    assert len(new) == 1 and "field 'num_samples'" in new[0] and "[entrypoint]" in new[0], new
    new = _planted(tmp_path / "gpu", ("overlays/local", "overlays/local/sweep"), {"sweep/configs/demo.yaml": (
        "  gpu: 0\n", "  gpu: 1\n")})
    assert new == ["RayJob/sweep: /configs/demo.yaml (ConfigMap sweep-configs-" + new[0].split("sweep-configs-")[1]]
    assert "no worker group fits a trial's resources (cpu 1.0, gpu 1.0)" in new[0]


def test_a_retried_sweep_without_shared_storage_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local", "overlays/local/sweep"), {"sweep/configs/demo.yaml": (
        "storage_path: s3://sentsweep/ray-results     # MinIO, so a retried RayJob finds the sweep's state\n"
        "storage_endpoint_url: http://minio.sentsweep.svc:9000\n", "storage_path: ./ray_results\n")})
    assert len(new) == 1 and "storage_path './ray_results' is not shared storage" in new[0], new


def test_a_reference_to_a_missing_secret_key_is_caught(tmp_path: Path) -> None:
    new = _planted(tmp_path, ("overlays/local",), {"base/secrets/minio.env.example": (
        "MINIO_ROOT_USER=", "MINIO_ROOT_NAME=")})
    assert new and all("Secret 'minio-credentials' has no key 'MINIO_ROOT_USER' [references]" in p for p in new)
    assert {p.split(":")[0] for p in new} == {"StatefulSet/minio", "Deployment/mlflow", "Job/minio-create-bucket",
                                              "RayCluster/sentsweep"}


def test_real_credentials_files_with_placeholders_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "k8s"
    shutil.copytree(K8S, copy)
    for example in (copy / "base" / "secrets").glob("*.env.example"):
        shutil.copyfile(example, example.with_suffix(""))
    report = k8s_check.validate([copy / "overlays" / "local"])
    assert report.rendered[0].examples_used == []
    assert sorted(str(p) for p in report.problems) == [
        "Secret/minio-credentials: data.MINIO_ROOT_PASSWORD still holds the example's placeholder [policy]",
        "Secret/mlflow-auth: data.MLFLOW_FLASK_SERVER_SECRET_KEY still holds the example's placeholder [policy]",
        "Secret/mlflow-auth: data.MLFLOW_TRACKING_PASSWORD still holds the example's placeholder [policy]",
        "Secret/postgres-credentials: data.POSTGRES_PASSWORD still holds the example's placeholder [policy]",
    ]


# -- the credentials files and the image --------------------------------------------------------------

def test_credentials_files_are_ignored_and_only_examples_committed() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    secrets = [f"k8s/base/secrets/{name}.env" for name in ("postgres", "minio", "mlflow")]
    ignored = subprocess.run(["git", "check-ignore", *secrets], cwd=REPO, capture_output=True, text=True)
    assert ignored.stdout.split() == secrets
    examples = subprocess.run(["git", "check-ignore", *(s + ".example" for s in secrets)], cwd=REPO,
                              capture_output=True, text=True)
    assert examples.stdout.strip() == ""
    dockerignore = (REPO / ".dockerignore").read_text().split()
    assert "k8s" in dockerignore and "**/*.env" in dockerignore


def test_dockerfile_invariants() -> None:
    text = (REPO / "docker" / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11(\.\d+)?-slim", text, re.M)
    assert re.search(r"^ARG TORCH_VARIANT=cpu\b", text, re.M), "a build arg picks CPU or CUDA torch"
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_pin = next(p for p in pins if p.startswith("torch=="))
    assert f"ARG TORCH_VERSION={torch_pin.removeprefix('torch==')}" in lines
    assert "torch==${TORCH_VERSION}" in text and "download.pytorch.org/whl/${TORCH_VARIANT}" in text
    assert "-c constraints.txt" in text and "[offline,server]" in text
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert lines[-1].startswith(("CMD", "ENTRYPOINT")) or users[-1] == lines[-1].split()[1]
