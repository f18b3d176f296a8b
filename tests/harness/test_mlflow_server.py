"""The tracking server of :mod:`tools.harness.mlflow_server` keeps PostgreSQL's superuser password off every
command line (``/proc/<pid>/cmdline`` is readable by any local user) and out of its files, while it still
stores runs in PostgreSQL with it (libpq reads ``PGPASSWORD`` from the environment)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil
import pytest

from tools.harness.mlflow_server import RUNS_DB, mlflow_server
from tools.harness.postgres import SUPERUSER, unavailable_reason

pytestmark = pytest.mark.cluster


def _cmdline(process: psutil.Process) -> bytes:
    """The raw ``/proc/<pid>/cmdline`` (what ``ps`` shows every user); empty when it has ended meanwhile."""
    try:
        return Path(f"/proc/{process.pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def test_no_postgres_password_on_a_command_line_or_in_the_server_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    import psycopg2
    from mlflow import MlflowClient

    started: list[list[str]] = []  # the short-lived runs (initdb, the two ``db upgrade``): their argv
    real_run = subprocess.run

    def recording_run(args, *rest, **options):
        started.append([str(arg) for arg in args])
        return real_run(args, *rest, **options)

    monkeypatch.setattr(subprocess, "run", recording_run)
    with mlflow_server(workers=2) as server:
        monkeypatch.setattr(subprocess, "run", real_run)
        password = server.postgres.password.encode()
        assert len(password) >= 16
        migrations = [argv[2:5] for argv in started if "upgrade" in argv]
        assert migrations == [["mlflow", "db", "upgrade"], ["mlflow.server.auth", "db", "upgrade"]]
        assert all(password.decode() not in arg for argv in started for arg in argv)
        root = psutil.Process(server.process.pid)
        tree = [root, *root.children(recursive=True)]
        assert len(tree) >= 3, [p.cmdline() for p in tree]  # mlflow server, uvicorn, its 2 workers
        lines = {p.pid: _cmdline(p) for p in tree}
        assert any(b"--backend-store-uri" in line for line in lines.values())
        leaking = [pid for pid, line in lines.items() if password in line]
        assert not leaking, f"the superuser password is on the command line of {len(leaking)} process(es)"
        assert all(password not in path.read_bytes() for path in server.root.rglob("*") if path.is_file())

        for name, value in server.client_env().items():
            monkeypatch.setenv(name, value)
        client = MlflowClient(tracking_uri=server.uri)  # through the server into PostgreSQL
        experiment_id = client.create_experiment("cmdline-probe")
        connection = psycopg2.connect(host="127.0.0.1", port=server.postgres.port, user=SUPERUSER,
                                      password=server.postgres.password, dbname=RUNS_DB, connect_timeout=10)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT name FROM experiments WHERE experiment_id = %s", (int(experiment_id),))
                assert cursor.fetchone() == ("cmdline-probe",)
        finally:
            connection.close()
