"""A sweep's driver makes MLflow's HTTP calls fail within seconds (the deliverer's back-off takes over), keeps what
the user set, and leaves the environment as it found it."""

from __future__ import annotations

from sentsweep.platform.tracking.run_writes import DRIVER_RETRIES, failing_quickly, quick_failures


def test_the_driver_retries_briefly_and_keeps_the_users_settings() -> None:
    environ = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    with quick_failures(environ):
        assert environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == DRIVER_RETRIES["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]
        assert environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] == DRIVER_RETRIES["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"]
        assert environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "5", "the user's value stays"
    assert environ == {"MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}


def test_a_sweep_entry_point_runs_with_them_and_restores_the_environment(monkeypatch) -> None:
    from mlflow.environment_variables import MLFLOW_HTTP_REQUEST_MAX_RETRIES

    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    seen = failing_quickly(lambda: MLFLOW_HTTP_REQUEST_MAX_RETRIES.get())()
    assert seen == int(DRIVER_RETRIES["MLFLOW_HTTP_REQUEST_MAX_RETRIES"]), "MLflow reads the driver's setting"
    assert MLFLOW_HTTP_REQUEST_MAX_RETRIES.get() == 7, "MLflow's default once the sweep returns"
