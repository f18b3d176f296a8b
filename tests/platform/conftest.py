"""Fixtures of the platform tests that need a remote sweep folder: moto's S3 server and a sweep on it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest
from mlflow import MlflowClient

from sentsweep.platform.folder.trust import TRACKING_URI_ENV
from sentsweep.platform.location import SweepLocation, SweepManifest, locate
from sentsweep.tracking.vocabulary import PARENT_TAG, ROLE_TAG, SWEEP_DIR_TAG, TRIAL_ID_TAG
from tests.platform.sweep_toy import toy_config
from tests.tracking.restartable_mlflow import RETRY_ENV
from tools.harness.processes import LOOPBACK
from tools.harness.s3_server import DUMMY_KEYS

BUCKET = "sweeps"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on a free loopback port, in a thread of this process, with :data:`BUCKET`."""
    pytest.importorskip("moto", reason="moto[server] is missing: install the dev extra")
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=DUMMY_KEYS["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=DUMMY_KEYS["AWS_SECRET_ACCESS_KEY"],
                 region_name=DUMMY_KEYS["AWS_REGION"]).create_bucket(Bucket=BUCKET)
    yield endpoint
    server.stop()


@pytest.fixture
def remote_sweep(tmp_path, tracking_uri, private_cache, s3_endpoint, monkeypatch) -> tuple[SweepLocation, str, str]:
    """A sweep folder on S3 with its manifest, its parent run (recorded for the folder) and one trial's child run
    (RUNNING) in MLflow; the location, the parent run and the experiment. ``$MLFLOW_TRACKING_URI`` names the
    tracking store, as for a user who runs ``sync`` against a shared bucket (:mod:`sentsweep.platform.folder.trust`)."""
    for key, value in {**DUMMY_KEYS, **RETRY_ENV, TRACKING_URI_ENV: tracking_uri}.items():
        monkeypatch.setenv(key, value)
    name = f"toy-{uuid.uuid4().hex[:8]}"
    location = locate(f"s3://{BUCKET}/ray_results/{name}", s3_endpoint)
    config = toy_config(tmp_path, tmp_path, tracking_uri)
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment(name, artifact_location=str(tmp_path / "mlartifacts"))
    parent = client.create_run(experiment_id, run_name=name, tags={SWEEP_DIR_TAG: location.uri}).info.run_id
    client.create_run(experiment_id, tags={PARENT_TAG: parent, TRIAL_ID_TAG: "t1", ROLE_TAG: "trial"})
    location.write_manifest(SweepManifest(sweep_name=name, config=config.model_dump(mode="json"), parent_run_id=parent,
                                          experiment_id=experiment_id, tracking_uri=tracking_uri, created=0.0), config)
    return location, parent, experiment_id
