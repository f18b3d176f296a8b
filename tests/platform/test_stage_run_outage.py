"""A sweep that ends without its confirmation stage ends the stage's run; when the driver does not know that run
and the tracking server does not answer, it is not looked up: a black-holed server would hold the sweep's exit for
MLflow's whole retry budget. Real parts: the store probe against a port that refuses; the client is a recorder."""

from __future__ import annotations

import socket
from types import SimpleNamespace
from typing import Any

import pyarrow.fs

from sentsweep.platform.driver.confirmation import end_stage_run
from sentsweep.platform.location import locate
from sentsweep.platform.tracking.parent_run import SweepRun


class Recorder:
    """A client that records each MLflow call and fails it, as a server that does not answer would."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            raise ConnectionError("no answer")
        return call


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unknown_stage_run_is_not_looked_up_while_mlflow_does_not_answer(tmp_path) -> None:
    client = Recorder()
    uri = f"http://127.0.0.1:{_closed_port()}"
    sweep = SweepRun(client, uri, "1", "parent", "toy-1", pyarrow.fs.LocalFileSystem(), str(tmp_path))  # type: ignore[arg-type]
    config = SimpleNamespace(confirm=SimpleNamespace(top_k=3))

    end_stage_run(sweep, config, locate(str(tmp_path)), "the sweep failed: boom")  # type: ignore[arg-type]

    assert client.calls == []
    assert sweep.stage_run_id is None
