"""k8s/base/bootstrap/mlflow_users.py against a real `mlflow server --app-name basic-auth` (the `server` extra):
the sweeps user is created non-admin with EDIT on the sweep experiments, a second run resets its password,
and the user can log there but can neither delete those experiments, touch others' nor manage users."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("flask_wtf", reason="the `server` extra (flask-wtf, psycopg2-binary, boto3) is not installed")
pytest.importorskip("psycopg2", reason="the `server` extra (flask-wtf, psycopg2-binary, boto3) is not installed")
pytest.importorskip("boto3", reason="the `server` extra (flask-wtf, psycopg2-binary, boto3) is not installed")

from mlflow import MlflowClient  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

from tools.harness.processes import end_group, free_port  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[2] / "k8s" / "base" / "bootstrap" / "mlflow_users.py"
ADMIN = ("admin", "admin-password-123")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("mlflow")
    config = root / "auth.ini"
    config.write_text(f"[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///{root}/auth.db\n"
                      "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
                      "auth_cache_ttl_seconds = 60\n")
    port = free_port()
    env = {**os.environ, "MLFLOW_AUTH_CONFIG_PATH": str(config), "MLFLOW_AUTH_ADMIN_USERNAME": ADMIN[0],
           "MLFLOW_AUTH_ADMIN_PASSWORD": ADMIN[1], "MLFLOW_FLASK_SERVER_SECRET_KEY": "test-key", "MLFLOW_WORKERS": "1"}
    log = (root / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--host",
                             "127.0.0.1", "--port", str(port), "--backend-store-uri", f"sqlite:///{root}/mlflow.db"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        end_group(proc)
        log.close()


def _bootstrap(uri: str, password: str) -> str:
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "MLFLOW_TRACKING_USERNAME": ADMIN[0],
           "MLFLOW_TRACKING_PASSWORD": ADMIN[1], "SWEEPS_USERNAME": "sweeps", "SWEEPS_PASSWORD": password,
           "SWEEP_EXPERIMENTS": "paper-cosent, sentsweep-demo", "WAIT_SECONDS": "120"}
    done = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _as(uri: str, user: str, password: str, monkeypatch: pytest.MonkeyPatch) -> MlflowClient:
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", user)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password)
    return MlflowClient(tracking_uri=uri)


def test_the_sweeps_user_may_edit_its_experiments_only(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    out = _bootstrap(server, "sweeps-password-1")
    assert "created MLflow user sweeps" in out and "experiment paper-cosent (" in out
    assert "password reset" in _bootstrap(server, "sweeps-password-2")  # a second run is harmless
    other = _as(server, *ADMIN, monkeypatch).create_experiment("someone-else")
    sweeps = _as(server, "sweeps", "sweeps-password-2", monkeypatch)
    experiment = sweeps.get_experiment_by_name("paper-cosent").experiment_id
    sweeps.log_metric(sweeps.create_run(experiment).info.run_id, "stsb_spearman", 0.8)
    for forbidden in (lambda: sweeps.delete_experiment(experiment), lambda: sweeps.create_run(other)):
        with pytest.raises(MlflowException, match="PERMISSION_DENIED|Permission denied"):
            forbidden()
    from mlflow.server import get_app_client

    with pytest.raises(MlflowException, match="PERMISSION_DENIED|Permission denied"):
        get_app_client("basic-auth", tracking_uri=server).create_user("intruder", "intruder-password-1")
    with pytest.raises(MlflowException):  # the reset invalidates the (one) worker's auth cache
        _as(server, "sweeps", "sweeps-password-1", monkeypatch).search_experiments()
