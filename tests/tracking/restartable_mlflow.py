"""``mlflow server`` on a fixed port and sqlite file, which a test stops and starts again (an outage)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.harness.processes import end_group, free_port, wait_for_port

#: A client environment that gives up at once on an unreachable server: no retries, a 5 s timeout.
RETRY_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}


class Server:
    """``mlflow server`` on a fixed port and sqlite file (copied from ``template``), stopped and started again."""

    def __init__(self, root: Path, template: Path) -> None:
        self.root = root
        shutil.copy(template, root / "server.db")
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        log = self.root / "server.log"
        command = [str(Path(sys.executable).with_name("mlflow")), "server", "--host", "127.0.0.1", "--port",
                   str(self.port), "--workers", "1", "--backend-store-uri", f"sqlite:///{self.root / 'server.db'}",
                   "--artifacts-destination", str(self.root / "server-artifacts")]
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with log.open("a") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env,
                                            start_new_session=True)
        wait_for_port(self.port, self.process, log, timeout=120, what="mlflow server")

    def stop(self) -> None:
        if self.process is not None:
            end_group(self.process, grace=10)  # the group this test started, by its id
            self.process = None


@contextlib.contextmanager
def outage_ready_server(root: Path, template: Path) -> Iterator[Server]:
    """A started :class:`Server`, this process's MLflow client giving up at once (:data:`RETRY_ENV`; telemetry
    off: its thread edits the environment while requests reads it) for the duration."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {**RETRY_ENV, "MLFLOW_DISABLE_TELEMETRY": "true"}.items():
            patch.setenv(key, value)
        server = Server(root, template)
        server.start()
        try:
            yield server
        finally:
            server.stop()
