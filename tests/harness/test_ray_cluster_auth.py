"""The harness's Ray cluster (``make test-cluster``, ``bench/sweep_scale.py``) runs in Ray's cluster mode, where the
GCS and the raylets listen on every interface and the dashboard agent, whose job API runs any command it is sent,
on the machine's address: it always has token auth, whatever ``RAY_AUTH_MODE`` the caller has (the Makefile's
``disabled``), and its drivers get the token in their environment. The token is never printed here (no assertion
shows it)."""

from __future__ import annotations

import contextlib
import http.client
import json
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tools.harness import local_stack, ray_cluster, ray_head
from tools.harness.local_stack import LocalStack
from tools.harness.processes import LOOPBACK, repo_pythonpath
from tools.harness.ray_head import RayHead, head_env

CLUSTER_MODE = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"}


class _Running:
    """A stand-in for a head's ``ray start`` process that never exits (nothing is started)."""

    pid = -1
    returncode = None

    def poll(self) -> None:
        return None


def _fake_head(token: str | None) -> RayHead:
    return RayHead(_Running(), f"http://{LOOPBACK}:1", Path("/nonexistent-ssr"), Path("/nonexistent-ssr/head.log"),
                   token, 1)  # type: ignore[arg-type]


def test_head_env_keeps_token_auth_whatever_the_caller_and_extra_say(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", "/nonexistent/token")
    token = secrets.token_hex(8)
    env = head_env(token, {**CLUSTER_MODE, "RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "other", "X": "1"})
    assert env["RAY_AUTH_MODE"] == "token"
    same = env["RAY_AUTH_TOKEN"] == token  # compared apart: a failed assertion shows no token
    assert same, "not the cluster's token"
    assert "RAY_AUTH_TOKEN_PATH" not in env and env["X"] == "1" and env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "1"


def test_a_cluster_mode_head_without_a_token_is_refused_before_anything_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a Ray head in cluster mode was started without a token")

    monkeypatch.setattr(ray_head.subprocess, "Popen", no_process)
    with pytest.raises(ValueError, match="cluster mode"):
        ray_head.start_head(num_cpus=1, env=CLUSTER_MODE)


def test_start_cluster_draws_a_token_and_hands_it_to_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    calls: list[dict[str, object]] = []

    def fake_start_head(**kwargs: object) -> RayHead:
        calls.append(kwargs)
        return _fake_head(kwargs.get("token"))  # type: ignore[arg-type]

    monkeypatch.setattr(ray_cluster, "start_head", fake_start_head)
    monkeypatch.setattr(ray_cluster.LocalCluster, "alive_nodes", lambda self, retry_s=0.0: {"head": "0" * 56})
    monkeypatch.setattr(RayHead, "stop", lambda self: None)
    cluster = ray_cluster.start_cluster(workers=0, env={"RAY_AUTH_MODE": "disabled"})
    token = calls[0]["token"]  # compared apart below: a failed assertion shows no token
    drawn = isinstance(token, str) and len(token) == 64 and all(c in "0123456789abcdef" for c in token)
    assert drawn, "no token of secrets.token_hex(32)"
    kept = cluster.token == token
    assert kept, "the cluster does not keep its token"
    handed = cluster.client_env() == {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    assert handed, "a driver of the cluster does not get RAY_AUTH_MODE=token and the token"
    stack = LocalStack(None, None, cluster, ray_options={"workers": 0})
    handed = stack.client_env() == cluster.client_env()
    assert handed, "LocalStack.client_env lacks the cluster's auth"

    monkeypatch.setattr(local_stack, "start_cluster", ray_cluster.start_cluster)
    stack.restart_ray()  # a fresh cluster keeps the token: the drivers' environment stays valid
    kept = calls[1]["token"] == token and stack.client_env()["RAY_AUTH_TOKEN"] == token
    assert kept, "a restarted cluster has another token"
    fresh = ray_cluster.start_cluster(workers=0).token != token
    assert fresh, "two clusters share a token"


def _own_addresses() -> set[str]:
    import psutil

    return {address.address.split("%")[0] for addresses in psutil.net_if_addrs().values()
            for address in addresses if address.family.name in ("AF_INET", "AF_INET6")}


def _probe_address(bound: str, own: set[str]) -> str | None:
    """Where to send a probe to a socket bound at ``bound``: loopback for a wildcard, the address itself when it is
    one of this machine's, else None (never another machine)."""
    if bound in ("0.0.0.0", "::"):
        return LOOPBACK if bound == "0.0.0.0" else "::1"
    if bound in own:
        return bound
    return None


def _post_without_token(host: str, port: int) -> int | None:
    """The HTTP status of a job submission to the job agent's API without an Authorization header (None: no HTTP
    answer, e.g. a gRPC port). The entrypoint does nothing."""
    body = json.dumps({"entrypoint": "true", "submission_id": f"auth-probe-{secrets.token_hex(4)}"}).encode()
    url_host = f"[{host}]" if ":" in host else host
    request = urllib.request.Request(f"http://{url_host}:{port}/api/job_agent/jobs/", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)
    except (OSError, ValueError, http.client.HTTPException):  # URLError is an OSError
        return None


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_the_harness_cluster_refuses_a_job_without_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    import psutil

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # as the Makefile runs the tests
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    cluster = ray_cluster.start_cluster(workers=0, head_cpus=1, env={"PYTHONPATH": repo_pythonpath()})
    try:
        root = psutil.Process(cluster.head.process.pid)
        environ = root.environ()  # never shown: it holds the token
        mode, held = environ.get("RAY_AUTH_MODE"), environ.get("RAY_AUTH_TOKEN")
        del environ
        assert mode == "token", "the head runs without token auth"
        same = held == cluster.token
        del held
        assert same, "the head holds another token"
        own, answers, deadline = _own_addresses(), {}, time.monotonic() + 120
        while time.monotonic() < deadline:
            agents = [p for p in root.children(recursive=True) if "DashboardAgent" in p.name()]
            for agent in agents:
                with contextlib.suppress(psutil.Error):
                    for conn in agent.net_connections(kind="tcp"):
                        host = _probe_address(conn.laddr.ip, own) if conn.status == psutil.CONN_LISTEN else None
                        if host is not None:
                            answers[(conn.laddr.ip, conn.laddr.port)] = _post_without_token(host, conn.laddr.port)
            accepted = {where: status for where, status in answers.items() if status and 200 <= status < 300}
            assert not accepted, f"the dashboard agent took a job without the token: {accepted}"
            if any(status in (401, 403) for status in answers.values()):
                break  # the job API is up, and refused
            time.sleep(2)
        assert any(status in (401, 403) for status in answers.values()), \
            f"the dashboard agent's job API never refused a job without the token (answers: {answers})"
    finally:
        cluster.stop()
        assert cluster.head.process.poll() is not None
