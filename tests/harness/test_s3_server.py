"""The S3 endpoint of :mod:`tools.harness.s3_server` serves the sweep storage path for real: a sweep folder's
manifest written and read through pyarrow's S3 filesystem (what Tune gets), listed and measured through boto3,
and the server gone after its context."""

from __future__ import annotations

import pytest

from tools.harness.s3_server import bucket_bytes, s3_server, unavailable_reason

pytestmark = pytest.mark.cluster


def test_a_sweep_folder_on_the_s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    from sentsweep.platform.location import locate

    with s3_server(bucket="probe") as s3:
        for name, value in s3.client_env().items():
            monkeypatch.setenv(name, value)
        location = locate(s3.uri("sweeps", "toy-1"), s3.endpoint_url)
        location.write_text("sweep.yaml", "name: toy\n")
        assert location.read_bytes("sweep.yaml") == b"name: toy\n" and location.list() == ["sweep.yaml"]
        objects, size = bucket_bytes(s3.boto3_client(), "probe", "sweeps/")  # + pyarrow's empty folder markers
        assert size == len("name: toy\n") and objects >= 1
        process = s3.process
    assert process.poll() is not None
