"""``sentsweep dashboard``: optuna-dashboard on the study journal in a sweep folder, over HTTP, behind sentsweep's
guard (the session's token, loopback names only)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import optuna
import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig, parse_sweep_config
from sentsweep.platform.location import SweepManifest, locate
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.platform.search.study_store import StudyStore, sweep_study_storage
from sentsweep.trainables.loop import NonFiniteLossError
from sentsweep.trainables.method import failure_report
from tools.harness.processes import end_group, free_port, wait_for_port


def lr_space(trial):
    trial.suggest_float("lr", 1e-5, 1e-1, log=True)


def _sweep(tmp_path: Path):
    """A sweep folder with its manifest, and the searcher writing its journal there."""
    config = SweepConfig(name="s", method="toy", seed=0, metric="score", storage_path=str(tmp_path))
    location = locate(str(tmp_path / "s-20260101-000000"))
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id="r", experiment_id="0", tracking_uri="sqlite:///x.db",
                                          created=0.0), config)
    return location, build_searcher(config, lr_space, [], store=StudyStore(location.uri), study_name=location.name)


def _finish(searcher, tid: str, outcome: str) -> None:
    searcher.suggest(tid)
    if outcome == "complete":
        searcher.on_trial_result(tid, {"score": 1.0, "training_iteration": 1})
        searcher.on_trial_complete(tid, {"score": 2.0, FINAL_KEY: 1.0, "training_iteration": 2})
    elif outcome == "pruned":
        searcher.on_trial_complete(tid, {"score": 0.5, "training_iteration": 1})
    else:
        searcher.on_trial_complete(tid, failure_report("score", NonFiniteLossError(2, math.nan)))


@pytest.mark.slow  # starts a server process (the CLI, optuna-dashboard): about a minute on 2 loaded cores
def test_dashboard_serves_the_study_over_http(tmp_path):
    location, searcher = _sweep(tmp_path)
    _finish(searcher, "a", "complete")
    _finish(searcher, "b", "pruned")
    assert sweep_study_storage(location.uri)[1] == location.name
    port, log = free_port(), tmp_path / "dashboard.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "sentsweep.cli", "dashboard", location.uri, "--port",
                                    str(port)], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_port(port, process, log, timeout=120, what="sentsweep dashboard")
        deadline = time.monotonic() + 60
        while "token=" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        token = log.read_text().split("token=", 1)[1].split()[0]
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies?token={token}",
                                            timeout=10) as response:
                    studies = json.loads(response.read())["study_summaries"]
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        (study,) = studies
        assert study["study_name"] == location.name
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{study['study_id']}?token={token}",
                                    timeout=10) as r:
            trials = json.loads(r.read())["trials"]
        assert [t["state"] for t in trials] == ["Complete", "Pruned"]
        _finish(searcher, "c", "complete")  # live: a trial told while it serves appears (optuna-dashboard caches)
        deadline = time.monotonic() + 60
        while len(trials) < 3:
            assert time.monotonic() < deadline, trials
            time.sleep(1.0)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{study['study_id']}?token={token}",
                                        timeout=10) as r:
                trials = json.loads(r.read())["trials"]
    finally:
        end_group(process, grace=10)
    assert process.poll() is not None


def test_the_dashboard_answers_only_its_token_and_loopback_names(tmp_path):
    """optuna-dashboard's API deletes studies without authentication of its own: behind sentsweep's guard a request
    without the session's token, or naming another host (DNS rebinding), is refused, and the study stays; the URL's
    token sets a cookie the browser's later requests carry."""
    import http.client
    import threading

    from sentsweep.platform.search.study_store import dashboard_cookie, dashboard_server

    location, searcher = _sweep(tmp_path)
    _finish(searcher, "a", "complete")
    storage, _ = sweep_study_storage(location.uri)
    port = free_port()
    server, address = dashboard_server(storage, port=port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = address.split("token=", 1)[1]

    def call(method: str, path: str, host: str = f"127.0.0.1:{port}", cookie: str | None = None, **more: str):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Host": host, **({"Cookie": cookie} if cookie else {}), **more}
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheader("Set-Cookie"), response.read()

    try:
        study_id = storage.get_study_id_from_name(location.name)
        assert call("DELETE", f"/api/studies/{study_id}")[0] == 403
        assert call("DELETE", f"/api/studies/{study_id}?token=wrong")[0] == 403
        assert call("GET", f"/api/studies?token={token}", host=f"evil.example:{port}")[0] == 403
        status, cookie, body = call("GET", f"/api/studies?token={token}")
        assert status == 200 and json.loads(body)["study_summaries"][0]["study_name"] == location.name
        assert cookie.startswith(f"{dashboard_cookie(port)}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        # a second dashboard's cookie (another port, same host to the browser) neither counts here nor replaces ours
        assert call("GET", "/api/studies", cookie=f"{dashboard_cookie(port + 1)}={token}")[0] == 403
        assert dashboard_cookie(port) != dashboard_cookie(port + 1)
        assert call("GET", "/api/studies", host=f"localhost:{port}", cookie=cookie.split(";")[0])[0] == 200
        # a page on another loopback port gets this port's cookie sent too (cookies ignore ports); its
        # browser says where the request comes from, and a change from there is refused
        ours = cookie.split(";")[0]
        elsewhere = {"Origin": f"http://127.0.0.1:{port + 1}", "Sec-Fetch-Site": "same-site"}
        assert call("DELETE", f"/api/studies/{study_id}", cookie=ours, **elsewhere)[0] == 403
        assert call("DELETE", f"/api/studies/{study_id}", cookie=ours, **{"Sec-Fetch-Site": "same-site"})[0] == 403
        assert call("GET", "/api/studies", cookie=ours, **elsewhere)[0] == 200  # reads: the browser keeps the answer
        assert [s.study_name for s in optuna.get_all_study_summaries(storage)] == [location.name]
        own = {"Origin": f"http://localhost:{port}", "Sec-Fetch-Site": "same-origin"}
        assert call("DELETE", f"/api/studies/{study_id}", host=f"localhost:{port}", cookie=ours, **own)[0] != 403
        assert optuna.get_all_study_summaries(storage) == []  # the dashboard's own page may
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_in_use_is_one_line_naming_the_option(tmp_path, capsys, private_cache):
    import socket

    from sentsweep.cli import main

    location, searcher = _sweep(tmp_path)
    _finish(searcher, "a", "complete")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["dashboard", location.uri, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sentsweep dashboard: error: option '--port': cannot serve on 127.0.0.1:{port} (")
    assert err.count("\n") == 1


def test_a_folder_without_a_study_is_one_clear_error(tmp_path):
    config = SweepConfig(name="s", method="toy", metric="score")
    location = locate(str(tmp_path / "s-1"))
    location.write_manifest(SweepManifest(sweep_name="s-1", config=config.model_dump(mode="json"), parent_run_id="r",
                                          experiment_id="0", tracking_uri="sqlite:///x.db", created=0.0), config)
    with pytest.raises(ConfigError, match="optuna_journal.log: the sweep folder holds no Optuna study yet"):
        sweep_study_storage(location.uri)
    assert sorted(p.name for p in (tmp_path / "s-1").iterdir()) == ["sentsweep_sweep.json", "sweep.yaml"]


def test_optuna_storage_in_a_sweep_config_is_refused_by_name_and_null_is_ignored():
    with pytest.raises(ConfigError, match="optuna_storage.*lives in its folder.*remove this field") as refused:
        parse_sweep_config({"name": "s", "method": "toy", "optuna_storage": "postgresql://u:OPTSECRET@db/optuna"},
                           "sweep.yaml")
    assert refused.value.field == "optuna_storage" and "OPTSECRET" not in str(refused.value)
    assert "\n" not in str(refused.value)
    config = parse_sweep_config({"name": "s", "method": "toy", "optuna_storage": None}, "sweep.yaml")
    assert "optuna_storage" not in config.model_dump()
