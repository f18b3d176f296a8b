"""Webhook notifications against a real HTTP server on 127.0.0.1: the Slack-compatible payload of a sweep's end,
failure and spent budget, retries, a dead or slow URL never failing anything (one warning line), and the URL
(a secret) nowhere in the config, the output or, after a real toy sweep, the sweep folder and the MLflow store."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import NotifyConfig, SweepConfig, parse_sweep_config
from sentsweep.platform.driver.budget import SweepBudget, record_budget
from sentsweep.platform.outcome import SweepOutcome
from sentsweep.platform.report.notify import SweepNotifier, masked_url
from tools.harness.processes import LOOPBACK, free_port

SECRET = "T0000/B0000/XXXXsecretXXXX"
ENV = "SENTSWEEP_TEST_WEBHOOK"


@dataclass
class Hook:
    """A webhook receiver: the JSON bodies it got, and the HTTP statuses it answers with (then 200)."""

    url: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (path, content type)
    statuses: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    location: str | None = None  # sent with a 3xx status


@pytest.fixture
def hook() -> Iterator[Hook]:
    state = Hook(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append((self.path, self.headers["Content-Type"]))
            if state.delay_s:
                threading.Event().wait(state.delay_s)
            status = state.statuses.pop(0) if state.statuses else 200
            if status == 200:
                state.bodies.append(json.loads(body))
            with contextlib.suppress(ConnectionError):  # a client that timed out is gone
                self.send_response(status)
                if state.location and 300 <= status < 400:
                    self.send_header("Location", state.location)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
    state.url = f"http://{LOOPBACK}:{server.server_port}/services/{SECRET}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


def _notifier(url: str, lines: list[str], **settings: Any) -> SweepNotifier:
    return SweepNotifier(NotifyConfig(webhook_env=ENV, **settings), "demo-1a2b", "stsb_dev", "max", "run123",
                         "/work/ray_results/demo-1a2b", echo=lines.append, environ={ENV: url}, backoff_s=0.01)


def _outcome(**update: Any) -> SweepOutcome:
    outcome = SweepOutcome("demo-1a2b", "/work/ray_results/demo-1a2b", "run123", "1", "sqlite:///mlruns.db",
                           {"finished": 3, "pruned": 1, "stopped": 0, "failed": 0}, 12.0)
    for key, value in update.items():
        setattr(outcome, key, value)
    return outcome


def test_end_and_failure_payloads_are_slack_text_with_structured_fields(hook: Hook) -> None:
    lines: list[str] = []
    notifier = _notifier(hook.url, lines)
    assert notifier.sweep_ended("finished", outcome=_outcome(best_trial_id="abc_00002", best_value=81.234))
    assert notifier.sweep_ended("crashed", "RuntimeError: the driver lost its node\nTraceback ...")
    assert notifier.sweep_ended("running") is False  # not an end
    end, failure = hook.bodies
    assert end["text"] == ("sentsweep: sweep demo-1a2b finished: best stsb_dev 81.23 (trial abc_00002); 3 finished, "
                           "1 pruned, 0 failed; MLflow run run123; folder /work/ray_results/demo-1a2b")
    assert end["sentsweep"] == {"event": "end", "sweep": "demo-1a2b", "status": "finished", "metric": "stsb_dev",
                                "mlflow_run_id": "run123", "sweep_folder": "/work/ray_results/demo-1a2b",
                                "best_trial": "abc_00002", "best_value": 81.234, "reason": None,
                                "counts": {"finished": 3, "pruned": 1, "stopped": 0, "failed": 0}}
    assert failure["sentsweep"]["event"] == "failure" and failure["sentsweep"]["status"] == "crashed"
    assert failure["sentsweep"]["reason"] == "RuntimeError: the driver lost its node"  # the first line only
    assert failure["text"].startswith("sentsweep: sweep demo-1a2b crashed; RuntimeError: the driver lost its node;")
    assert hook.requests[0] == (f"/services/{SECRET}", "application/json; charset=utf-8")
    assert notifier.sent == ["end", "failure"] and lines == []


def test_only_the_chosen_events_are_sent_and_a_spent_budget_is_one(hook: Hook) -> None:
    lines: list[str] = []
    notifier = _notifier(hook.url, lines, on=["budget"])
    assert not notifier.sweep_ended("finished", outcome=_outcome())
    from sentsweep.platform.config import BudgetConfig

    budget = SweepBudget(BudgetConfig(gpu_hours=10 / 3600), echo=lines.append)
    budget.start()
    budget.see("a", {"time_total_s": 11.0})
    assert budget.check() and budget.check()  # checked at every step of Tune's loop, spent once
    record_budget(budget, lambda metrics: None, lambda tags: None, notifier.budget_spent)
    assert [body["sentsweep"]["event"] for body in hook.bodies] == ["budget"]
    assert hook.bodies[0]["sentsweep"]["reason"] == budget.spent == lines[0]
    assert hook.bodies[0]["text"].startswith("sentsweep: sweep demo-1a2b spent its budget; "
                                             "stopped by budget: gpu_hours")


def test_a_server_error_is_retried_and_a_client_error_is_not(hook: Hook) -> None:
    lines: list[str] = []
    hook.statuses = [503, 500]
    assert _notifier(hook.url, lines, retries=2).sweep_ended("failed", "no trial finished")
    assert len(hook.requests) == 3 and len(hook.bodies) == 1 and lines == []
    hook.statuses = [404]
    assert not _notifier(hook.url, lines, retries=2).sweep_ended("failed", "no trial finished")
    assert len(hook.requests) == 4  # one attempt
    assert lines == [f"notify: the failure notification to http://{LOOPBACK}:{hook.url.split(':')[2].split('/')[0]}"
                     "/*** was not delivered (HTTP 404 after 1 attempt); the sweep goes on"]


def test_a_redirect_is_not_followed(hook: Hook) -> None:
    """urllib would follow a receiver's 302 with a GET of any address it named (a metadata
    service, a cluster-internal one) and reported the notification delivered."""
    from tests.platform.capture_server import capturing_server

    lines: list[str] = []
    with capturing_server() as (elsewhere, heard):
        hook.statuses, hook.location = [302], f"{elsewhere}/latest/meta-data/iam/"
        assert not _notifier(hook.url, lines, retries=2).sweep_ended("failed", "no trial finished")
    assert heard == [] and len(hook.requests) == 1
    assert len(lines) == 1 and "(HTTP 302 after 1 attempt)" in lines[0] and SECRET not in lines[0]


def test_an_unreachable_or_slow_url_is_one_warning_line_without_the_url(hook: Hook) -> None:
    lines: list[str] = []
    dead = f"http://{LOOPBACK}:{free_port()}/services/{SECRET}"
    assert not _notifier(dead, lines, retries=1).sweep_ended("finished", outcome=_outcome())
    hook.delay_s = 1.0
    assert not _notifier(hook.url, lines, retries=0, timeout_s=0.2).sweep_ended("finished", outcome=_outcome())
    assert len(lines) == 2 and all(line.startswith("notify: the end notification to http://127.0.0.1:")
                                   and line.endswith("the sweep goes on") for line in lines)
    assert "after 2 attempts" in lines[0] and "timed out after 1 attempt" in lines[1]
    assert not any(SECRET in line or "services" in line for line in lines)
    assert masked_url("https://hooks.slack.com/services/T/B/K") == "https://hooks.slack.com/***"


def test_a_url_with_a_space_or_control_character_is_one_line_without_its_path() -> None:
    """A variable holding the URL and something after it (``URL # alerts`` from an env file) or a tab: urllib's
    refusal quotes the URL's path, which holds the secret."""
    lines: list[str] = []
    for url in (f"http://{LOOPBACK}:{free_port()}/services/{SECRET} # alerts",
                f"http://{LOOPBACK}:{free_port()}/services/{SECRET}\tx"):
        assert not _notifier(url, lines, retries=2).sweep_ended("finished", outcome=_outcome())
    assert len(lines) == 2 and all(line.endswith("the sweep goes on") for line in lines)
    assert not any(SECRET in line or "services" in line or "secret" in line for line in lines)
    assert all("after 1 attempt)" in line for line in lines), "a URL that cannot be sent is not retried"


def test_without_the_variable_nothing_is_sent_and_it_is_said_once() -> None:
    lines: list[str] = []
    config = SweepConfig.model_validate({"name": "demo", "method": "cosent", "notify": {"webhook_env": ENV}})
    notifier = SweepNotifier.for_sweep(config, "demo-1a2b", "run123", "/work/ray_results/demo-1a2b", lines.append)
    assert lines == [f"notify: ${ENV} is not set; no notifications are sent"]
    notifier.environ = {}
    assert not notifier.sweep_ended("finished", outcome=_outcome()) and not notifier.budget_spent("spent")
    assert SweepConfig.model_validate({"name": "d", "method": "cosent"}).notify.webhook_env is None  # off by default


def test_the_events_as_the_docs_write_them_in_yaml_are_read(tmp_path: Path) -> None:
    """YAML 1.1 reads an unquoted ``on`` key as the boolean true: ``notify: {webhook_env: ..., on: [...]}``, as
    docs/architecture.md writes it, still names the events."""
    from sentsweep.platform.config import load_sweep_config

    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: demo\nmethod: cosent\nnotify: {{webhook_env: {ENV}, on: [end, interrupted]}}\n")
    assert load_sweep_config(path).notify.on == ["end", "interrupted"]
    path.write_text(f"name: demo\nmethod: cosent\nnotify:\n  webhook_env: {ENV}\n  on: [budget]\n")
    assert load_sweep_config(path).notify.on == ["budget"]


def test_the_url_itself_is_refused_in_the_config_without_repeating_it() -> None:
    url = f"https://hooks.slack.com/services/{SECRET}"
    for notify in ({"webhook": url}, {"webhook_env": url}):
        with pytest.raises(ConfigError) as err:
            parse_sweep_config({"name": "demo", "method": "cosent", "notify": notify}, "sweep.yaml")
        assert SECRET not in str(err.value) and "environment variable" in str(err.value)
        assert "notify" in str(err.value)


def test_a_toy_sweep_notifies_its_spent_budget_and_its_end_and_writes_no_url(hook: Hook, tmp_path: Path,
                                                                             tiny_bert_dir: Path, tracking_uri: str,
                                                                             ray_session: None, monkeypatch) -> None:
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    monkeypatch.setenv(ENV, hook.url)
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        fixed={"max_steps": 4, "eval_every": 2}, budget={"gpu_hours": 1e-9},
                        notify={"webhook_env": ENV}, export=False, plots=False)
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lines.append, finalize=False)
    # spent at the first report (step 2 of 4): that trial stops there, so none finished and the sweep ends failed
    assert [body["sentsweep"]["event"] for body in hook.bodies] == ["budget", "failure"]
    end = hook.bodies[1]["sentsweep"]
    assert end["status"] == "failed"
    assert end["counts"] == {"finished": 0, "pruned": 0, "stopped": 1, "not started": 0, "failed": 0}
    assert end["mlflow_run_id"] == outcome.parent_run_id and end["sweep_folder"] == outcome.sweep_dir
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "sweep.yaml" for p in written)
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]  # the folder, the MLflow store, artifacts
    assert not any(SECRET in line for line in lines)
