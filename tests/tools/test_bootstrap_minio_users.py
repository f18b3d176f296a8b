"""k8s/base/bootstrap/minio-users.sh, run by /bin/sh with a stand-in `mc` that records its calls and keeps the
policy documents it is given (no MinIO here): two users with a policy each, both re-run without error, and
what the policies allow, read with the AWS evaluation rules that MinIO follows (an explicit Deny wins over
any Allow; nothing allowed is denied), for the requests Tune and MLflow's artifact store make."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "k8s" / "base" / "bootstrap" / "minio-users.sh"
#: A stand-in for `mc`: every call is a line of calls.log; `admin policy create root NAME FILE` keeps FILE as
#: NAME.json; `admin policy attach` answers as mc does when the policy is already attached (minio/mc#4670);
#: `admin user add` with no secret key on its command line reads it from stdin, as mc does (fetchUserKeys), into
#: secrets.log.
FAKE_MC = """#!/bin/sh
echo "$*" >> "$MC_STATE/calls.log"
echo "${MC_HOST_root:-}" >> "$MC_STATE/mc_host.log"
if [ "$1" = ls ] && [ -n "${MC_REFUSE:-}" ]; then echo "mc: <ERROR> $MC_REFUSE" >&2; exit 1; fi
case "$1 $2 $3" in
  "admin policy create") cp "$6" "$MC_STATE/$5.json" ;;
  "admin user add") [ "$#" -eq 6 ] || { IFS= read -r secret; echo "$5 $secret" >> "$MC_STATE/secrets.log"; } ;;
  "admin policy attach")
    if [ -e "$MC_STATE/attached-$5-$7" ]; then echo "mc: <ERROR> policy $5 is already in effect" >&2; exit 1; fi
    : > "$MC_STATE/attached-$5-$7" ;;
esac
"""
ENV = {"S3_ENDPOINT": "http://minio:9000", "BUCKET": "sentsweep", "POLICY": "sentsweep-bucket",
       "MLFLOW_POLICY": "sentsweep-mlflow-artifacts", "MINIO_ROOT_USER": "root", "MINIO_ROOT_PASSWORD": "root-pass",
       "AWS_ACCESS_KEY_ID": "ray-user", "AWS_SECRET_ACCESS_KEY": "ray-secret",
       "MLFLOW_ACCESS_KEY_ID": "mlflow-user", "MLFLOW_SECRET_ACCESS_KEY": "mlflow-secret"}
pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="no /bin/sh")


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    (bin_dir / "mc").write_text(FAKE_MC)
    (bin_dir / "mc").chmod(0o755)
    full = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "MC_STATE": str(state), "TMPDIR": str(state),
            **ENV, **env}
    return subprocess.run(["sh", str(SCRIPT)], env=full, capture_output=True, text=True, timeout=60, check=False)


def _allowed(policy: dict[str, Any], action: str, resource: str, prefix: str | None = None) -> bool:
    """Whether ``policy`` allows ``action`` on ``resource`` (``prefix``: a listing's s3:prefix)."""
    def applies(statement: dict[str, Any]) -> bool:
        actions, resources = statement["Action"], statement["Resource"]
        if not any(fnmatch.fnmatchcase(action, a) for a in actions) or \
                not any(fnmatch.fnmatchcase(resource, r) for r in resources):
            return False
        for operator, keys in (statement.get("Condition") or {}).items():
            assert operator == "StringLike" and set(keys) == {"s3:prefix"}, statement  # all the script uses
            if prefix is None or not any(fnmatch.fnmatchcase(prefix, p) for p in keys["s3:prefix"]):
                return False
        return True

    effects = {s["Effect"] for s in policy["Statement"] if applies(s)}
    return "Allow" in effects and "Deny" not in effects


def test_two_users_with_a_policy_each_and_a_second_run_is_harmless(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    second = _run(tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "policy sentsweep-bucket already attached to ray-user" in second.stdout
    assert "policy sentsweep-mlflow-artifacts already attached to mlflow-user" in second.stdout
    calls = (tmp_path / "state" / "calls.log").read_text().replace(str(tmp_path / "state"), "$TMPDIR").splitlines()
    assert "secret" not in "\n".join(calls)  # no secret key on mc's command line: it reads them from stdin
    assert (tmp_path / "state" / "secrets.log").read_text().splitlines() == [
        "ray-user ray-secret", "mlflow-user mlflow-secret"] * 2
    assert calls[:10] == [
        "ls root", "mb --ignore-existing root/sentsweep",
        "admin policy create root sentsweep-bucket $TMPDIR/policy-sentsweep-bucket.json",
        "admin user add root ray-user", "admin policy attach root sentsweep-bucket --user ray-user",
        "admin policy create root sentsweep-mlflow-artifacts $TMPDIR/policy-sentsweep-mlflow-artifacts.json",
        "admin user add root mlflow-user",
        "admin policy attach root sentsweep-mlflow-artifacts --user mlflow-user",
        "ls root", "mb --ignore-existing root/sentsweep"]
    # the root login from the environment, never written into mc's config file (`mc alias set`)
    hosts = set((tmp_path / "state" / "mc_host.log").read_text().splitlines())
    assert hosts == {"http://root:root-pass@minio:9000"}


def test_the_ray_user_is_denied_mlflow_artifacts_and_the_mlflow_user_has_only_those(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    ray = json.loads((tmp_path / "state" / "sentsweep-bucket.json").read_text())
    mlflow = json.loads((tmp_path / "state" / "sentsweep-mlflow-artifacts.json").read_text())
    bucket, artifact = "arn:aws:s3:::sentsweep", "arn:aws:s3:::sentsweep/mlflow-artifacts/1/abc/artifacts/model.pt"
    tune = "arn:aws:s3:::sentsweep/ray-results/demo-1/trial/checkpoint_000001/model.pt"
    objects = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
    # Tune's state: everything it had before, the artifacts prefix no more (reading or listing included)
    assert all(_allowed(ray, a, tune) for a in objects)
    assert _allowed(ray, "s3:ListBucket", bucket, "ray-results/demo-1/") and _allowed(ray, "s3:ListBucket", bucket)
    assert not any(_allowed(ray, a, r) for a in objects + ("s3:PutObjectTagging",)
                   for r in (artifact, "arn:aws:s3:::sentsweep/mlflow-artifacts"))
    assert not _allowed(ray, "s3:ListBucket", bucket, "mlflow-artifacts/1/")
    # the MLflow server: its prefix (objects and listings), nothing else of the bucket, no other bucket
    assert all(_allowed(mlflow, a, artifact) for a in objects)
    assert _allowed(mlflow, "s3:ListBucket", bucket, "mlflow-artifacts/1/abc/artifacts/")
    assert not any(_allowed(mlflow, a, r) for a in objects
                   for r in (tune, "arn:aws:s3:::sentsweep/mlflow-artifactsX", "arn:aws:s3:::other/mlflow-artifacts/x"))
    assert not _allowed(mlflow, "s3:ListBucket", bucket, "ray-results/")
    assert not _allowed(mlflow, "s3:ListBucket", bucket)


def test_one_user_for_both_is_refused(tmp_path: Path) -> None:
    done = _run(tmp_path, MLFLOW_ACCESS_KEY_ID="ray-user")
    assert done.returncode == 1
    assert "storage.env and mlflow-storage.env name the same MinIO user ray-user: give each its own" in done.stderr
    assert not (tmp_path / "state" / "calls.log").exists()


def test_a_root_password_a_url_cannot_hold_as_it_is_is_refused_before_mc_runs(tmp_path: Path) -> None:
    """The root login goes into MC_HOST_root unencoded; a '/' (half of `openssl rand -base64`'s
    outputs) made mc fail to parse it and the script wait for MinIO for ever."""
    done = _run(tmp_path, MINIO_ROOT_PASSWORD="abc/def+ghi=")
    assert done.returncode == 1
    assert "MINIO_ROOT_USER and MINIO_ROOT_PASSWORD may hold only letters, digits" in done.stderr
    assert not (tmp_path / "state" / "calls.log").exists()


def test_a_minio_that_never_accepts_the_login_fails_the_job_with_mcs_error(tmp_path: Path) -> None:
    done = _run(tmp_path, MC_REFUSE="The Access Key Id you provided does not exist", MINIO_WAIT_TRIES="1")
    assert done.returncode == 1
    assert "did not answer with the root login of minio.env: mc: <ERROR> The Access Key Id" in done.stderr
    assert (tmp_path / "state" / "calls.log").read_text().splitlines() == ["ls root"]
