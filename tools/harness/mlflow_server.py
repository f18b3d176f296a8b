"""An MLflow tracking server as k8s/base/mlflow.yaml runs it, on this machine: PostgreSQL behind it (runs in
database ``mlflow``, basic-auth users in ``mlflow_auth``), ``--app-name basic-auth`` with the auth cache on,
``--workers N``, both schemas migrated first (the init container's ``mlflow db upgrade`` and the auth app's
``db upgrade``), job execution off, in a process group of its own on a free loopback port.

The admin's name and password come from ``MLFLOW_AUTH_ADMIN_USERNAME`` / ``MLFLOW_AUTH_ADMIN_PASSWORD`` when
set, else are generated for this run; they are written only into the server's environment, never into the
repository. PostgreSQL's superuser password is in no command line and no file either (any local user can read
``/proc/<pid>/cmdline``): the database URLs of ``mlflow db upgrade``, ``--backend-store-uri`` and the auth
config carry no password, and libpq takes it from ``PGPASSWORD`` in the processes' environment.
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tools.harness.postgres import Postgres, postgres_server
from tools.harness.processes import LOOPBACK, ServiceError, end_group, free_port, log_tail, wait_for_port

RUNS_DB, AUTH_DB = "mlflow", "mlflow_auth"


@dataclass
class MlflowServer:
    """A running tracking server; :meth:`client_env` logs in as its admin (never print it). :meth:`restart` stops
    it and starts it again on the same port with the same database (what a rolling update does to clients)."""

    uri: str
    workers: int
    process: subprocess.Popen
    log: Path
    admin: tuple[str, str] = field(repr=False)
    postgres: Postgres = field(repr=False)
    argv: list[str] = field(default_factory=list, repr=False)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    root: Path | None = None

    def client_env(self) -> dict[str, str]:
        return {"MLFLOW_TRACKING_URI": self.uri, "MLFLOW_TRACKING_USERNAME": self.admin[0],
                "MLFLOW_TRACKING_PASSWORD": self.admin[1]}

    @property
    def port(self) -> int:
        return int(self.uri.rsplit(":", 1)[1])

    def stop(self) -> None:
        """End the server's process group (PostgreSQL keeps running)."""
        end_group(self.process)

    def start(self, timeout: float = 180.0) -> None:
        """Start the (stopped) server again on its port and wait until it answers ``/health``."""
        with self.log.open("a") as sink:
            self.process = subprocess.Popen(self.argv, stdout=sink, stderr=subprocess.STDOUT, env=self.env,
                                            cwd=self.root, start_new_session=True)
        wait_for_port(self.port, self.process, self.log, timeout=timeout, what="mlflow server")
        _wait_ready(self.uri, self.process, self.log, timeout)

    def restart(self, down_s: float = 0.0, timeout: float = 180.0) -> None:
        """:meth:`stop`, ``down_s`` seconds of outage, :meth:`start`."""
        self.stop()
        time.sleep(down_s)
        self.start(timeout)


def _admin() -> tuple[str, str]:
    user = os.environ.get("MLFLOW_AUTH_ADMIN_USERNAME") or "admin"
    password = os.environ.get("MLFLOW_AUTH_ADMIN_PASSWORD") or secrets.token_hex(12)  # MLflow wants 12+ chars
    return user, password


def _migrate(postgres: Postgres, env: dict[str, str], root: Path) -> None:
    """The tracking schema, then the auth app's (before any worker starts: workers would race on them)."""
    for argv in (["-m", "mlflow", "db", "upgrade", postgres.uri(RUNS_DB, password=False)],
                 ["-m", "mlflow.server.auth", "db", "upgrade", "--url", postgres.uri(AUTH_DB, password=False)]):
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
                  pool_size: int = 3, max_overflow: int = 2, artifacts_destination: str | None = None,
                  env: Mapping[str, str] | None = None, timeout: float = 180.0) -> Iterator[MlflowServer]:
    """A basic-auth tracking server on PostgreSQL (a new one unless ``postgres`` is given); stopped, and its
    folder removed, on exit, also when starting it fails. ``artifacts_destination``: where the proxied artifacts
    go (default: a folder of the server's; ``s3://bucket/prefix`` with the S3 variables in ``env``)."""
    with contextlib.ExitStack() as stack:
        if postgres is None:
            postgres = stack.enter_context(postgres_server(databases=(RUNS_DB, AUTH_DB)))
        root = Path(tempfile.mkdtemp(prefix="ssmlflow-", dir="/tmp"))
        stack.callback(shutil.rmtree, root, ignore_errors=True)
        admin = _admin()
        config = root / "basic_auth.ini"
        config.write_text("[mlflow]\ndefault_permission = READ\n"
                          f"database_uri = {postgres.uri(AUTH_DB, password=False)}\n"
                          "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
                          f"auth_cache_ttl_seconds = {auth_cache_ttl}\n")
        config.chmod(0o600)
        server_env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_TRACKING_")}
        server_env.update(env or {})
        server_env.update(postgres.env())
        server_env.update(MLFLOW_AUTH_CONFIG_PATH=str(config), MLFLOW_AUTH_ADMIN_USERNAME=admin[0],
                          MLFLOW_AUTH_ADMIN_PASSWORD=admin[1], MLFLOW_FLASK_SERVER_SECRET_KEY=secrets.token_hex(16),
                          MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
                          MLFLOW_SQLALCHEMYSTORE_POOL_SIZE=str(pool_size),
                          MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW=str(max_overflow),
                          MLFLOW_SQLALCHEMYSTORE_POOL_RECYCLE="1800", PYTHONUNBUFFERED="1")
        _migrate(postgres, server_env, root)
        port = free_port()
        argv = [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--host", LOOPBACK,
                "--port", str(port), "--workers", str(workers), "--backend-store-uri",
                postgres.uri(RUNS_DB, password=False),
                "--serve-artifacts", "--artifacts-destination", artifacts_destination or str(root / "artifacts")]
        server = MlflowServer(f"http://{LOOPBACK}:{port}", workers, None, root / "server.log",  # type: ignore[arg-type]
                              admin, postgres, argv, server_env, root)
        server.log.touch()
        stack.callback(lambda: server.process is not None and end_group(server.process))
        server.start(timeout)
        yield server
