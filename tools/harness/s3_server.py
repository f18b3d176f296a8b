"""An S3-compatible endpoint on this machine: ``moto_server`` (the ``moto[server]`` package of the ``dev``
extra; a real HTTP S3 protocol server, the one Ray's own storage tests use) on a free loopback port, in a process
group of its own, with one bucket created.

Its keys are fixed dummies (moto accepts any); :meth:`S3Server.client_env` is what the clients read: pyarrow's
``S3FileSystem`` (Tune's storage, ``storage_endpoint_url``) the ``AWS_*`` variables, the MLflow server's boto3
``MLFLOW_S3_ENDPOINT_URL`` too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tools.harness.processes import LOOPBACK, ServiceError, end_group, free_port, log_tail, wait_for_port

#: moto's conventional dummy keys and region (any value is accepted; none of them is a secret).
DUMMY_KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
              "AWS_REGION": "us-east-1"}


def unavailable_reason() -> str | None:
    """Why no S3 endpoint can be started here (None when one can)."""
    if importlib.util.find_spec("moto") is None or shutil.which("moto_server", path=str(Path(sys.executable).parent)) \
            is None:
        return "moto[server] is missing: install the dev extra"
    return None


@dataclass
class S3Server:
    """A running endpoint and its bucket."""

    endpoint_url: str
    bucket: str
    process: subprocess.Popen
    log: Path

    def client_env(self) -> dict[str, str]:
        """The variables S3 clients (pyarrow, boto3, MLflow's artifact store) need for this endpoint."""
        return {**DUMMY_KEYS, "AWS_ENDPOINT_URL": self.endpoint_url, "MLFLOW_S3_ENDPOINT_URL": self.endpoint_url}

    def uri(self, *parts: str) -> str:
        """``s3://BUCKET/part/...``."""
        return "/".join([f"s3://{self.bucket}", *parts])

    def boto3_client(self):  # noqa: ANN201 - botocore's generated client class
        import boto3

        keys = DUMMY_KEYS
        return boto3.client("s3", endpoint_url=self.endpoint_url, aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"], region_name=keys["AWS_REGION"])


def bucket_bytes(client, bucket: str, prefix: str = "") -> tuple[int, int]:  # noqa: ANN001 - a boto3 S3 client
    """(objects, bytes) under ``prefix`` of ``bucket``."""
    objects = size = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            objects += 1
            size += int(item["Size"])
    return objects, size


@contextlib.contextmanager
def s3_server(*, bucket: str = "sentsweep", timeout: float = 60.0) -> Iterator[S3Server]:
    """``moto_server`` on a free loopback port with ``bucket`` created; stopped (and its folder removed) on
    exit, also when starting it fails."""
    reason = unavailable_reason()
    if reason:
        raise ServiceError(reason)
    root = Path(tempfile.mkdtemp(prefix="sss3-", dir="/tmp"))
    port = free_port()
    log = root / "moto.log"
    process: subprocess.Popen | None = None
    try:
        with log.open("w") as sink:
            process = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", LOOPBACK,
                                        "-p", str(port)], stdout=sink, stderr=subprocess.STDOUT, cwd=root,
                                       start_new_session=True)
        wait_for_port(port, process, log, timeout=timeout, what="moto_server")
        server = S3Server(f"http://{LOOPBACK}:{port}", bucket, process, log)
        _create_bucket(server, timeout)
        yield server
    finally:
        if process is not None:
            end_group(process, grace=10)
        shutil.rmtree(root, ignore_errors=True)


def _create_bucket(server: S3Server, timeout: float) -> None:
    """The port opens before moto answers every request: retry the create until it does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.boto3_client().create_bucket(Bucket=server.bucket)
            return
        except Exception as exc:  # botocore's connection and HTTP errors alike
            if time.monotonic() > deadline:
                raise ServiceError(f"moto_server refused bucket {server.bucket}: {exc}\n{log_tail(server.log)}") \
                    from None
            time.sleep(0.3)
