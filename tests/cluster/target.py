"""The target of the cluster scenarios (:class:`Target`: the local stack, or the user's services named by the
``SENTSWEEP_TEST_*`` variables of tests/cluster/conftest.py) and the figures they record."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tools.harness.local_stack import LocalStack

REPO = Path(__file__).resolve().parents[2]
FIGURES: list[dict[str, Any]] = []


@dataclass
class Target:
    """Where the scenarios run: Ray address, sweep storage root, tracking URI, and the driver's environment."""

    stack: LocalStack
    storage_root: str  # s3://bucket/prefix, this session's own
    endpoint_url: str | None
    tracking_uri: str
    env: dict[str, str] = field(repr=False)
    ray_override: str | None = None

    @property
    def ray_address(self) -> str:
        if self.ray_override:
            return self.ray_override
        assert self.stack.ray is not None
        return self.stack.ray.address

    def require_local(self, *parts: str) -> None:
        """Skip a scenario that stops ``parts`` ("ray", "tracking") when they are the user's, not ours."""
        mine = {"ray": self.stack.ray is not None, "tracking": self.stack.mlflow is not None}
        theirs = [part for part in parts if not mine[part]]
        if theirs:
            pytest.skip(f"this scenario stops the {' and '.join(theirs)} service: only run on the local one")

    def s3_client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, aws_access_key_id=self.env.get("AWS_ACCESS_KEY_ID"),
                            aws_secret_access_key=self.env.get("AWS_SECRET_ACCESS_KEY"),
                            aws_session_token=self.env.get("AWS_SESSION_TOKEN"),
                            region_name=self.env.get("AWS_REGION") or self.env.get("AWS_DEFAULT_REGION"))

    def bucket_and_prefix(self, *parts: str) -> tuple[str, str]:
        """The bucket and key prefix of ``storage_root/parts``."""
        bucket, _, prefix = "/".join([self.storage_root, *parts]).removeprefix("s3://").partition("/")
        return bucket, prefix.rstrip("/") + "/"


def record(scenario: str, **figures: Any) -> None:
    """Keep a scenario's figures for the end-of-session table (and SENTSWEEP_CLUSTER_FIGURES)."""
    row = {"scenario": scenario, **figures}
    FIGURES.append(row)
    path = os.environ.get("SENTSWEEP_CLUSTER_FIGURES")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(row, sort_keys=True) + "\n")


