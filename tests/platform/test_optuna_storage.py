"""The sweep's study mirrored to an Optuna RDB storage as trials finish (sqlite beside the sweep), across a
pickled searcher (Tune's save and restore), and served by ``sentsweep dashboard`` over HTTP."""

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
from sentsweep.platform.optuna_storage import STUDY_DB, study_mirror, study_storage_url, sweep_storage_url
from sentsweep.platform.search import FINAL_KEY, PruningAwareOptunaSearch, build_searcher
from sentsweep.platform.storage import SweepManifest, locate
from sentsweep.trainables.loop import NonFiniteLossError
from sentsweep.trainables.method import failure_report
from tools.harness.processes import end_group, free_port, wait_for_port


def lr_space(trial):
    trial.suggest_float("lr", 1e-5, 1e-1, log=True)


def _sweep_folder(tmp_path: Path, **config) -> tuple[SweepConfig, object]:
    config = SweepConfig(name="s", method="toy", seed=0, metric="score", storage_path=str(tmp_path), **config)
    location = locate(str(tmp_path / "s-20260101-000000"))
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id="r", experiment_id="0", tracking_uri="sqlite:///x.db",
                                          created=0.0), config)
    return config, location


def _finish(searcher, tid: str, outcome: str) -> None:
    searcher.suggest(tid)
    if outcome == "complete":
        searcher.on_trial_result(tid, {"score": 1.0, "training_iteration": 1})
        searcher.on_trial_complete(tid, {"score": 2.0, FINAL_KEY: 1.0, "training_iteration": 2})
    elif outcome == "pruned":
        searcher.on_trial_complete(tid, {"score": 0.5, "training_iteration": 1})
    else:
        searcher.on_trial_complete(tid, failure_report("score", NonFiniteLossError(2, math.nan)))


def test_trials_are_mirrored_as_they_finish_and_after_a_restore(tmp_path):
    config, location = _sweep_folder(tmp_path)
    url = study_storage_url(config, location)
    assert url == f"sqlite:///{tmp_path / 's-20260101-000000' / STUDY_DB}"
    searcher = build_searcher(config, lr_space, [], mirror=study_mirror(config, location))
    for tid, outcome in (("a", "complete"), ("b", "pruned"), ("c", "infeasible")):
        _finish(searcher, tid, outcome)
    mirrored = optuna.load_study(study_name=location.name, storage=url).trials
    assert [t.state.name for t in mirrored] == ["COMPLETE", "PRUNED", "COMPLETE"]
    assert mirrored[0].value == 2.0 and mirrored[0].intermediate_values == {1: 1.0}
    assert mirrored[2].constraints == {"diverged": 1.0} and "fail_reason" in mirrored[2].user_attrs

    searcher.save(str(tmp_path / "searcher.pkl"))  # what Tune does; the connection is not pickled
    restored = PruningAwareOptunaSearch(lr_space, metric="score", mode="max")
    restored.restore(str(tmp_path / "searcher.pkl"))
    restored.mirror.add(restored.study.trials[0])  # a trial that ran again after a resume: not copied twice
    _finish(restored, "d", "complete")
    mirrored = optuna.load_study(study_name=location.name, storage=url).trials
    assert [t.user_attrs["sweep_trial_number"] for t in mirrored] == [0, 1, 2, 3]


def test_a_remote_sweep_needs_a_url_and_a_refused_write_never_fails_the_sweep(tmp_path):
    config = SweepConfig(name="s", method="toy", metric="score", storage_path="s3://bucket/sweeps")
    assert study_storage_url(config, locate("s3://bucket/sweeps/s-1")) is None
    broken = SweepConfig(name="s", method="toy", metric="score", optuna_storage=f"sqlite:///{tmp_path}/no/such/x.db")
    searcher = build_searcher(broken, lr_space, [], mirror=study_mirror(broken, locate(str(tmp_path / "s-1"))))
    _finish(searcher, "a", "complete")  # logged once, the trial is told to the searcher all the same
    assert searcher.study.trials[0].value == 2.0 and searcher.mirror.down
    with pytest.raises(ConfigError, match="database URL") as info:
        parse_sweep_config({"name": "s", "method": "toy", "optuna_storage": "optuna.db"}, "sweep.yaml")
    assert info.value.field == "optuna_storage"


def test_the_mirror_catches_up_once_its_storage_answers_again(tmp_path, monkeypatch):
    """A storage that refused a write (its folder missing: standing for a database that is down) is tried again
    after RETRY_AFTER_S; the trials that finished meanwhile are mirrored then, each once."""
    from sentsweep.platform import optuna_storage

    folder = tmp_path / "db"
    config = SweepConfig(name="s", method="toy", metric="score", optuna_storage=f"sqlite:///{folder}/x.db")
    mirror = study_mirror(config, locate(str(tmp_path / "s-1")))
    searcher = build_searcher(config, lr_space, [], mirror=mirror)
    _finish(searcher, "a", "complete")
    _finish(searcher, "b", "pruned")
    assert mirror.down and not folder.exists()
    folder.mkdir()  # the storage is back
    _finish(searcher, "c", "complete")  # within RETRY_AFTER_S: not tried yet
    assert mirror.down and not (folder / "x.db").exists()
    monkeypatch.setattr(optuna_storage, "RETRY_AFTER_S", 0.0)
    mirror._down_until = 0.0  # the retry time has come
    _finish(searcher, "d", "pruned")
    mirrored = optuna.load_study(study_name="s-1", storage=config.optuna_storage).trials
    assert [t.user_attrs["sweep_trial_number"] for t in mirrored] == [0, 1, 2, 3] and not mirror.down


def test_a_database_that_never_answers_costs_the_mirror_a_few_seconds_not_the_sweep(tmp_path):
    """SRE review 18, L2: a PostgreSQL port that accepts connections and never answers (a database host in trouble;
    packets dropped cost the kernel's TCP timeout, about 2 minutes) held the driver's Tune loop for ever at each try:
    now the connection gives up after CONNECT_TIMEOUT_S and the sweep goes on without its mirror."""
    import socket
    import threading

    from sentsweep.platform.optuna_storage import CONNECT_TIMEOUT_S

    silent = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody ever reads or answers
    port = silent.getsockname()[1]
    config = SweepConfig(name="s", method="toy", metric="score",
                         optuna_storage=f"postgresql+psycopg2://optuna@127.0.0.1:{port}/optuna")
    searcher = build_searcher(config, lr_space, [], mirror=study_mirror(config, locate(str(tmp_path / "s-1"))))
    started = time.monotonic()
    worker = threading.Thread(target=_finish, args=(searcher, "a", "complete"), daemon=True)
    worker.start()
    worker.join(timeout=6 * CONNECT_TIMEOUT_S)
    seconds = time.monotonic() - started
    silent.close()
    assert not worker.is_alive(), f"the mirror still waits for the database after {seconds:.0f} s"
    assert searcher.mirror.down and searcher.study.trials[0].value == 2.0


@pytest.mark.slow  # starts a server process (the CLI, optuna-dashboard): about a minute on 2 loaded cores
def test_dashboard_serves_the_study_over_http(tmp_path):
    config, location = _sweep_folder(tmp_path)
    searcher = build_searcher(config, lr_space, [], mirror=study_mirror(config, location))
    _finish(searcher, "a", "complete")
    _finish(searcher, "b", "pruned")
    assert sweep_storage_url(location.uri)[1] == location.name
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
    finally:
        end_group(process, grace=10)
    assert process.poll() is not None


def test_the_dashboard_answers_only_its_token_and_loopback_names(tmp_path):
    """optuna-dashboard's API deletes studies without authentication of its own: behind sentsweep's guard a request
    without the session's token, or naming another host (DNS rebinding), is refused, and the study stays (review
    13, finding 6); the URL's token sets a cookie the browser's later requests carry."""
    import http.client
    import threading

    from sentsweep.platform.optuna_storage import dashboard_cookie, dashboard_server

    config, location = _sweep_folder(tmp_path)
    searcher = build_searcher(config, lr_space, [], mirror=study_mirror(config, location))
    _finish(searcher, "a", "complete")
    url, _ = sweep_storage_url(location.uri)
    port = free_port()
    server, address = dashboard_server(url, port=port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = address.split("token=", 1)[1]

    def call(method: str, path: str, host: str = f"127.0.0.1:{port}", cookie: str | None = None, **more: str):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Host": host, **({"Cookie": cookie} if cookie else {}), **more}
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheader("Set-Cookie"), response.read()

    try:
        study_id = optuna.load_study(study_name=location.name, storage=url)._study_id
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
        # review 20, L5: a page on another loopback port gets this port's cookie sent too (cookies ignore ports); its
        # browser says where the request comes from, and a change from there is refused
        ours = cookie.split(";")[0]
        elsewhere = {"Origin": f"http://127.0.0.1:{port + 1}", "Sec-Fetch-Site": "same-site"}
        assert call("DELETE", f"/api/studies/{study_id}", cookie=ours, **elsewhere)[0] == 403
        assert call("DELETE", f"/api/studies/{study_id}", cookie=ours, **{"Sec-Fetch-Site": "same-site"})[0] == 403
        assert call("GET", "/api/studies", cookie=ours, **elsewhere)[0] == 200  # reads: the browser keeps the answer
        assert [s.study_name for s in optuna.get_all_study_summaries(url)] == [location.name]
        own = {"Origin": f"http://localhost:{port}", "Sec-Fetch-Site": "same-origin"}
        assert call("DELETE", f"/api/studies/{study_id}", host=f"localhost:{port}", cookie=ours, **own)[0] != 403
        assert optuna.get_all_study_summaries(url) == []  # the dashboard's own page may
    finally:
        server.shutdown()
        server.server_close()
