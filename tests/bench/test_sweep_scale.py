"""The parts of bench.sweep_scale that can be checked in seconds: the counting proxy in front of a real HTTP server,
the trivial trainable, the suggestion clock on the platform's real searcher, and the placement of the trials."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from bench._scale_driver import TRIVIAL, TRIVIAL_SPACE, SuggestClock
from bench.sweep_scale import GPUS_PER_WORKER, WORKERS, endpoint, resources
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.searcher import build_searcher
from tools.harness.counting_proxy import Request, counting_proxy


class _Echo(BaseHTTPRequestHandler):
    """Answers with what it got: method, path, body length; ``/slow`` takes 0.5 s."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return None

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/slow"):
            time.sleep(0.5)
        data = json.dumps({"method": self.command, "path": self.path, "body": body.decode(),
                           "chunked": "Transfer-Encoding" in self.headers}).encode()
        self.send_response(404 if self.path == "/missing" else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = _answer  # noqa: N815


@pytest.fixture
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_proxy_forwards_every_request_and_counts_it_with_the_server_s_time(upstream: str) -> None:
    with counting_proxy(upstream) as proxy, requests.Session() as session:
        started = time.time()
        got = [session.get(f"{proxy.uri}/api/2.0/mlflow/runs/get?run_id=1").json(),
               session.post(f"{proxy.uri}/api/2.0/mlflow/runs/log-batch", json={"metrics": [1, 2]}).json(),
               session.put(f"{proxy.uri}/slow/mlflow-artifacts/artifacts/1/r/a.json",
                           data=(part for part in (b"ab", b"cd"))).json()]  # a generator: sent chunked
        missing = session.get(f"{proxy.uri}/missing")
        seen = proxy.requests(since=started)
    assert [g["path"] for g in got] == ["/api/2.0/mlflow/runs/get?run_id=1", "/api/2.0/mlflow/runs/log-batch",
                                        "/slow/mlflow-artifacts/artifacts/1/r/a.json"]
    assert got[1]["body"] == '{"metrics": [1, 2]}' and got[2]["body"] == "abcd" and not got[2]["chunked"]
    assert missing.status_code == 404
    assert [(r.method, r.path, r.status) for r in seen] == [
        ("GET", "/api/2.0/mlflow/runs/get", 200), ("POST", "/api/2.0/mlflow/runs/log-batch", 200),
        ("PUT", "/slow/mlflow-artifacts/artifacts/1/r/a.json", 200), ("GET", "/missing", 404)]
    assert seen[2].seconds >= 0.5 > 0.25 > seen[0].seconds  # room for a pause of the test process
    assert endpoint(seen[2]) == "PUT /slow/mlflow-artifacts/artifacts/…"
    assert endpoint(Request("POST", "/api/2.0/mlflow/runs/create", 200, 0.0, 0.0)) == \
        "POST /api/2.0/mlflow/runs/create"


def test_the_trivial_trial_reports_each_step_and_finishes() -> None:
    config = {"max_steps": 4, "eval_every": 1, "test_tasks": "stsb_test", **TRIVIAL_SPACE.first_point}
    result, final = TRIVIAL.train_standalone(config, log=lambda line: None)
    dev = [row["stsb_dev"] for row in result.state.history if "stsb_dev" in row]
    assert len(dev) == 4 and dev == sorted(dev) and dev[0] < dev[-1]
    assert final[FINAL_KEY] == 1.0 and final["stsb_dev"] == max(dev)


def test_the_clock_times_the_real_searcher_and_tells_who_made_each_suggestion() -> None:
    config = SweepConfig(name="s", method=TRIVIAL.name, seed=1, startup_trials=2, max_concurrent_trials=4)
    searcher = build_searcher(config, TRIVIAL_SPACE.define_by_run, [TRIVIAL_SPACE.first_point])
    searcher.set_search_properties(config.metric, config.mode, {})
    with SuggestClock() as clock:
        for trial_id in ("a", "b", "c"):
            searcher.suggest(trial_id)
        for trial_id, value in (("a", 80.0), ("b", 70.0)):
            searcher.on_trial_complete(trial_id, {config.metric: value, FINAL_KEY: 1.0, "training_iteration": 1})
        searcher.suggest("d")
    assert [c["kind"] for c in clock.calls] == ["fixed", "random", "random", "tpe"]
    assert [c["finished"] for c in clock.calls] == [0, 0, 0, 2] and all(c["seconds"] > 0 for c in clock.calls)
    searcher.suggest("e")
    assert len(clock.calls) == 4  # the wrapper is gone with the block


@pytest.mark.parametrize("concurrent", [1, 6, 16, 40])
def test_the_concurrent_trials_fit_on_the_workers_gpus_and_cpus(concurrent: int) -> None:
    trial, cpus = resources(concurrent)
    fit = min(int(round(WORKERS * GPUS_PER_WORKER / trial["gpu"], 6)), int(WORKERS * cpus / trial["cpu"]))
    assert 0 < trial["gpu"] <= 1 and fit >= concurrent
