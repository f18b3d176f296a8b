"""The cluster scenarios' one session-wide target: a local multi-node Ray cluster (a head, two worker nodes with two
logical GPUs each), an S3 endpoint (moto) for Tune's storage and MLflow's artifacts, and an MLflow tracking server
on PostgreSQL (:mod:`tools.harness.local_stack`), started once and shared; a scenario restarts only what it kills.

Point the same tests at your own services (docs/deploy.md, "Before your first cluster sweep"):

- ``SENTSWEEP_TEST_STORAGE=s3://bucket/prefix`` (+ ``SENTSWEEP_TEST_STORAGE_ENDPOINT=http://minio:9000``, keys in
  the usual ``AWS_*`` variables): no local S3 endpoint;
- ``SENTSWEEP_TEST_TRACKING_URI=http://mlflow:5000`` (login in ``MLFLOW_TRACKING_USERNAME``/``PASSWORD``): no
  local PostgreSQL and tracking server; the restart scenario is skipped;
- ``SENTSWEEP_TEST_RAY_ADDRESS=HOST:6379``: no local Ray; its nodes must import this checkout (same path, on
  PYTHONPATH) and reach the storage and tracking; the node and head loss scenarios are skipped.

Every figure a scenario records (:func:`record`) is printed at the end of the session and, with
``SENTSWEEP_CLUSTER_FIGURES=FILE``, appended to FILE as JSON lines.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.target import FIGURES, Target
from tools.harness.local_stack import local_stack
from tools.harness.processes import repo_pythonpath


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.section("cluster scenario figures")
        for row in FIGURES:
            terminalreporter.write_line(json.dumps(row, sort_keys=True))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """The target of every cluster scenario; what it started is stopped by PID at the end, also on failure."""
    storage = os.environ.get("SENTSWEEP_TEST_STORAGE")
    tracking = os.environ.get("SENTSWEEP_TEST_TRACKING_URI")
    ray_address = os.environ.get("SENTSWEEP_TEST_RAY_ADDRESS")
    pythonpath = repo_pythonpath()
    node_env = {"PYTHONPATH": pythonpath, "SENTSWEEP_CACHE": str(tmp_path_factory.mktemp("node-cache")),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with local_stack(s3=storage is None, tracking=tracking is None, ray=ray_address is None,
                     node_env=node_env) as stack:
        session = f"cluster-tests-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
        mine = ("MLFLOW_TRACKING_",) if stack.mlflow else ()  # the user's login, unless we bring the server
        env = {key: value for key, value in os.environ.items() if not key.startswith(("RAY_ADDRESS", *mine))}
        env.update(stack.client_env())
        env.update(node_env)
        env["MLFLOW_TRACKING_URI"] = tracking or stack.mlflow.uri  # the server a resume of an s3:// folder may contact
        target = Target(stack, f"{storage.rstrip('/')}/{session}" if storage else stack.s3.uri(session),
                        os.environ.get("SENTSWEEP_TEST_STORAGE_ENDPOINT") if storage else stack.s3.endpoint_url,
                        tracking or stack.mlflow.uri, env, ray_address)
        with pytest.MonkeyPatch.context() as patch:  # this process reads MLflow as the drivers do (its login)
            for name, value in stack.client_env().items():
                if name.startswith("MLFLOW_TRACKING_"):
                    patch.setenv(name, value)
            yield target
