"""The bootstrap Job's second step (image docker/mlflow.Dockerfile), as MLflow's admin: the non-admin user
the sweeps log with, and EDIT for it on the sweep experiments (created when missing).

MLflow's basic-auth app gives every user ``default_permission`` (READ) elsewhere, and the creator of an
experiment MANAGE on it, so the sweeps user can also start new experiments of its own but can neither
change nor delete anyone else's, nor manage users. Every step may run again: an existing user gets the
password of ``mlflow-sweeps.env`` (so rotating it is: edit the file, re-apply, re-run the Job), an
existing grant is replaced by EDIT.

Environment: MLFLOW_TRACKING_URI, MLFLOW_TRACKING_USERNAME/PASSWORD (the admin), SWEEPS_USERNAME,
SWEEPS_PASSWORD, SWEEP_EXPERIMENTS (comma-separated names), WAIT_SECONDS (for the server to answer).
"""

from __future__ import annotations

import os
import sys
import time

import requests
from mlflow import MlflowClient
from mlflow.exceptions import RestException
from mlflow.server import get_app_client

EDIT = "EDIT"


def wait_for_server(uri: str, seconds: float) -> None:
    """Return once ``uri``/health answers 200; exit 1 after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if requests.get(f"{uri}/health", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"MLflow at {uri} did not answer within {seconds:.0f} s")
        print(f"waiting for MLflow at {uri}", flush=True)
        time.sleep(5)


def ensure_user(auth, username: str, password: str) -> None:
    """Create ``username`` (not an admin), or reset its password when it exists."""
    try:
        auth.create_user(username, password)
        print(f"created MLflow user {username}")
    except RestException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
        auth.update_user_password(username, password)
        print(f"MLflow user {username} exists: password reset to the Secret's")
    if auth.get_user(username).is_admin:
        sys.exit(f"MLflow user {username} is an admin; the sweeps must log as a non-admin user")


def grant_edit(auth, tracking: MlflowClient, username: str, experiment: str) -> None:
    """EDIT for ``username`` on ``experiment`` (created by the admin when missing)."""
    found = tracking.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else tracking.create_experiment(experiment)
    try:
        auth.grant_user_permission(username, "experiment", experiment_id, EDIT)
    except RestException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
        auth.revoke_user_permission(username, "experiment", experiment_id)
        auth.grant_user_permission(username, "experiment", experiment_id, EDIT)
    print(f"experiment {experiment} ({experiment_id}): {username} may {EDIT}")


def main() -> int:
    uri = os.environ["MLFLOW_TRACKING_URI"].rstrip("/")
    wait_for_server(uri, float(os.environ.get("WAIT_SECONDS", "600")))
    auth = get_app_client("basic-auth", tracking_uri=uri)
    username = os.environ["SWEEPS_USERNAME"]
    ensure_user(auth, username, os.environ["SWEEPS_PASSWORD"])
    tracking = MlflowClient(tracking_uri=uri)
    for experiment in filter(None, (e.strip() for e in os.environ.get("SWEEP_EXPERIMENTS", "").split(","))):
        grant_edit(auth, tracking, username, experiment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
