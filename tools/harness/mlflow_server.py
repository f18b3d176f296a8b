"""An MLflow tracking server as k8s/base/mlflow.yaml runs it, on this machine: PostgreSQL behind it (runs in
database ``mlflow``, basic-auth users in ``mlflow_auth``), ``--app-name basic-auth`` with the auth cache on,
``--workers N``, both schemas migrated first (the init container's ``mlflow db upgrade`` and the auth app's
``db upgrade``), job execution off, in a process group of its own on a free loopback port.

The admin's name and password come from ``MLFLOW_AUTH_ADMIN_USERNAME`` / ``MLFLOW_AUTH_ADMIN_PASSWORD`` when
set, else are generated for this run; they are written only into the server's temporary folder and its
environment, never into the repository.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.harness.postgres import Postgres, postgres_server
from tools.harness.processes import LOOPBACK, ServiceError, end_group, free_port, log_tail, wait_for_port

RUNS_DB, AUTH_DB = "mlflow", "mlflow_auth"


@dataclass
class MlflowServer:
    """A running tracking server; :meth:`client_env` logs in as its admin (never print it)."""

    uri: str
    workers: int
    process: subprocess.Popen
    log: Path
    admin: tuple[str, str] = field(repr=False)
    postgres: Postgres = field(repr=False)

    def client_env(self) -> dict[str, str]:
        return {"MLFLOW_TRACKING_URI": self.uri, "MLFLOW_TRACKING_USERNAME": self.admin[0],
                "MLFLOW_TRACKING_PASSWORD": self.admin[1]}


def _admin() -> tuple[str, str]:
    user = os.environ.get("MLFLOW_AUTH_ADMIN_USERNAME") or "admin"
    password = os.environ.get("MLFLOW_AUTH_ADMIN_PASSWORD") or secrets.token_hex(12)  # MLflow wants 12+ chars
    return user, password


def _migrate(postgres: Postgres, env: dict[str, str], root: Path) -> None:
    """The tracking schema, then the auth app's (before any worker starts: workers would race on them)."""
    for argv in (["-m", "mlflow", "db", "upgrade", postgres.uri(RUNS_DB)],
                 ["-m", "mlflow.server.auth", "db", "upgrade", "--url", postgres.uri(AUTH_DB)]):
        done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=300,
                              cwd=root)
        if done.returncode != 0:
            raise ServiceError(f"{argv[1]} db upgrade failed ({done.returncode}): "
                               f"{(done.stdout + done.stderr)[-2000:].replace(postgres.password, '***')}")


def _wait_ready(uri: str, process: subprocess.Popen, log: Path, timeout: float) -> None:
    """Until ``/health`` answers (the port opens before the workers have loaded the app)."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise ServiceError(f"mlflow server exited with {process.returncode}:\n{log_tail(log)}")
        with contextlib.suppress(urllib.error.URLError, OSError), \
                urllib.request.urlopen(f"{uri}/health", timeout=5) as response:
            if response.status == 200:
                return
        if time.monotonic() > deadline:
            raise ServiceError(f"mlflow server not healthy within {timeout:.0f} s:\n{log_tail(log)}")
        time.sleep(0.5)


@contextlib.contextmanager
def mlflow_server(*, workers: int = 1, postgres: Postgres | None = None, auth_cache_ttl: int = 60,
                  pool_size: int = 3, max_overflow: int = 2, timeout: float = 180.0) -> Iterator[MlflowServer]:
    """A basic-auth tracking server on PostgreSQL (a new one unless ``postgres`` is given); stopped, and its
    folder removed, on exit, also when starting it fails."""
    with contextlib.ExitStack() as stack:
        if postgres is None:
            postgres = stack.enter_context(postgres_server(databases=(RUNS_DB, AUTH_DB)))
        root = Path(tempfile.mkdtemp(prefix="ssmlflow-", dir="/tmp"))
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        admin = _admin()
        config = root / "basic_auth.ini"
        config.write_text("[mlflow]\ndefault_permission = READ\n"
                          f"database_uri = {postgres.uri(AUTH_DB)}\n"
                          "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
                          f"auth_cache_ttl_seconds = {auth_cache_ttl}\n")
        config.chmod(0o600)
        env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_TRACKING_")}
        env.update(MLFLOW_AUTH_CONFIG_PATH=str(config), MLFLOW_AUTH_ADMIN_USERNAME=admin[0],
                   MLFLOW_AUTH_ADMIN_PASSWORD=admin[1], MLFLOW_FLASK_SERVER_SECRET_KEY=secrets.token_hex(16),
                   MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
                   MLFLOW_SQLALCHEMYSTORE_POOL_SIZE=str(pool_size),
                   MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW=str(max_overflow),
                   MLFLOW_SQLALCHEMYSTORE_POOL_RECYCLE="1800", PYTHONUNBUFFERED="1")
        _migrate(postgres, env, root)
        port = free_port()
        log = root / "server.log"
        with log.open("w") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--host", LOOPBACK,
                 "--port", str(port), "--workers", str(workers), "--backend-store-uri", postgres.uri(RUNS_DB),
                 "--serve-artifacts", "--artifacts-destination", str(root / "artifacts")],
                stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
        stack.callback(end_group, process)
        uri = f"http://{LOOPBACK}:{port}"
        wait_for_port(port, process, log, timeout=timeout, what="mlflow server")
        _wait_ready(uri, process, log, timeout)
        yield MlflowServer(uri, workers, process, log, admin, postgres)
