"""The lease on a sweep's parent run (real MLflow store): one holder at a time, named when another process is
refused; a heartbeat keeps it alive, a stale one expires, releasing removes it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest
from mlflow import MlflowClient

from sentsweep.platform.interrupt import StopSignals, graceful_stops
from sentsweep.platform.lease import (
    EXPIRY_FACTOR,
    FENCE_FACTOR,
    LEASE_TAG,
    LeaseHeldError,
    LeaseLost,
    LeaseRecord,
    SweepLease,
    pid_namespace,
)
from sentsweep.platform.stopping import StopWatch
from sentsweep.platform.sweep_state import RESUMABLE, RUN_STATUS, STATUS_TAG, is_resumable


@pytest.fixture
def parent(tracking_uri: str) -> tuple[MlflowClient, str]:
    client = MlflowClient(tracking_uri=tracking_uri)
    return client, client.create_run(client.create_experiment("lease")).info.run_id


def test_a_live_lease_refuses_a_second_holder_by_name(parent) -> None:
    client, run_id = parent
    # interval 2 s: the watchdog's own renewal of an unrenewed lease gets interval / 2 (a 0.5 s interval left a
    # slow sqlite write 0.25 s before the lease was fenced: flake review 14, F3)
    with SweepLease(client, run_id, interval_s=2.0, settle_s=0.0) as first:
        record = first.current()
        assert record is not None and record.pid == os.getpid() and record.token == first.token
        assert record.pid_ns == pid_namespace()
        beat = record.heartbeat
        time.sleep(3.0)
        assert first.current().heartbeat > beat, "the heartbeat thread refreshes the lease"
        second = SweepLease(client, run_id, settle_s=0.0)
        with pytest.raises(LeaseHeldError, match=rf"being run by .*@.* \(pid {os.getpid()}\), heartbeat"):
            second.acquire()
    assert LEASE_TAG not in client.get_run(run_id).data.tags, "released on exit"


def test_a_stale_lease_expires(parent) -> None:
    client, run_id = parent
    stale = LeaseRecord("bob", "node-7", 4242, "old", time.time() - 60, 30.0)
    client.set_tag(run_id, LEASE_TAG, stale.to_json())
    with pytest.raises(LeaseHeldError, match="bob@node-7"):
        SweepLease(client, run_id, settle_s=0.0).acquire()  # 60 s < 3 x 30 s: still live
    client.set_tag(run_id, LEASE_TAG, LeaseRecord("bob", "node-7", 4242, "old", time.time() - 91, 30.0).to_json())
    lease = SweepLease(client, run_id, settle_s=0.0)
    lease.acquire()  # 91 s > 3 x 30 s: expired, taken over
    assert lease.current().token == lease.token
    lease.release()


def test_a_gone_holder_frees_the_lease_at_once_only_in_this_pid_namespace() -> None:
    """Containers with host networking share the hostname, not the process ids: a pid this process cannot see is
    no proof that the holder is gone unless the record names this PID namespace."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = LeaseRecord("bob", socket.gethostname(), int(gone.stdout), "old", time.time(), 30.0, pid_namespace())
    if here.pid_ns is None:
        pytest.skip("no /proc/self/ns/pid here")
    assert here.expired(), "a fresh lease of a process of this host and PID namespace that is gone"
    assert not replace(here, pid_ns="pid:[4026500001]").expired(), "another container's live driver"
    old = LeaseRecord.parse(json.dumps({k: v for k, v in json.loads(here.to_json()).items() if k != "pid_ns"}))
    assert old is not None and old.pid_ns is None
    assert not old.expired(), "an older record (no namespace) expires by its age only"
    assert old.expired(now=time.time() + 91)
    newer = LeaseRecord.parse(json.dumps({**json.loads(here.to_json()), "from_a_newer_version": 1}))
    assert newer == here, "a field this version does not know is ignored, not read as no lease"


def test_a_holder_refused_by_an_answering_server_fences_itself_before_its_lease_can_expire(
        parent, tmp_path, mlflow_template) -> None:
    """The tracking server answers but refuses the holder's heartbeats (a real ``mlflow server`` that does not know
    the run: standing for rotated credentials): after FENCE_FACTOR intervals without a renewal the holder stops as a
    superseded one does, while another driver cannot take the sweep over yet (EXPIRY_FACTOR intervals)."""
    from tests.tracking.restartable_mlflow import outage_ready_server

    client, run_id = parent
    stops = StopSignals()
    interval = 2.0  # the fence probes the server's /health (up to 3 s for a server that does not answer)
    lease = SweepLease(client, run_id, interval_s=interval, settle_s=0.0, sweep_name="toy-1a2b",
                       on_lost=stops.supersede)
    (tmp_path / "other").mkdir()
    with outage_ready_server(tmp_path / "other", mlflow_template) as server, graceful_stops(stops):
        MlflowClient(tracking_uri=server.uri).search_experiments()  # the server's first request is slow
        started = time.monotonic()
        lease.acquire()
        renewed = time.monotonic()
        lease.client = MlflowClient(tracking_uri=server.uri)  # answers, refuses: no such run there
        deadline = renewed + 20
        while lease.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        lost_at = time.monotonic()
        assert lease.lost is not None, "the holder never gave the lease up"
        assert lost_at - started >= FENCE_FACTOR * interval and lost_at - renewed < EXPIRY_FACTOR * interval, \
            f"fenced {lost_at - renewed:.1f}s after the last renewal"
        assert stops.superseded == lease.lost
        assert lease.lost.startswith("the lease of sweep toy-1a2b could not be renewed for ")
        assert lease.lost.endswith("this one stops")
        with pytest.raises(LeaseLost, match="could not be renewed"):
            StopWatch().on_step_end(iteration=1, trials=[])
    lease.client = client  # its own server again: nothing was written meanwhile, and the release frees it
    assert LeaseRecord.parse(client.get_run(run_id).data.tags[LEASE_TAG]).token == lease.token
    lease.release()
    assert not lease._thread.is_alive() and not lease._watchdog.is_alive()
    assert LEASE_TAG not in client.get_run(run_id).data.tags


def test_a_tracking_outage_does_not_stop_the_holder(parent, monkeypatch) -> None:
    """The tracking server goes away (a closed loopback port, no retries) for longer than the expiry: nobody can take
    the lease over while it answers nobody, so the holder keeps the sweep running (the journals keep what it logs),
    and renews its lease once the server is back."""
    from tests.tracking.restartable_mlflow import RETRY_ENV
    from tools.harness.processes import free_port

    for key, value in {**RETRY_ENV, "MLFLOW_DISABLE_TELEMETRY": "true"}.items():
        monkeypatch.setenv(key, value)
    client, run_id = parent
    interval = 2.0  # the renewal once it is back gets interval / 2 before a fence (1 s; flake review 14, F3)
    lease = SweepLease(client, run_id, interval_s=interval, settle_s=0.0, sweep_name="toy-1a2b")
    lease.acquire()
    first = LeaseRecord.parse(client.get_run(run_id).data.tags[LEASE_TAG]).heartbeat
    lease.client = MlflowClient(tracking_uri=f"http://127.0.0.1:{free_port()}")  # the server is gone
    time.sleep(EXPIRY_FACTOR * interval + 1.5)
    assert lease.lost is None and lease._watchdog.is_alive()
    lease.client = client  # back
    deadline = time.monotonic() + 2 * interval + 1
    while LeaseRecord.parse(client.get_run(run_id).data.tags[LEASE_TAG]).heartbeat == first:
        assert time.monotonic() < deadline, "the lease was not renewed after the outage"
        time.sleep(0.1)
    assert lease.lost is None
    lease.release()
    assert LEASE_TAG not in client.get_run(run_id).data.tags


def test_a_tracking_server_restart_while_the_heartbeat_waits_in_mlflows_backoff_does_not_fence(
        tmp_path, mlflow_template, monkeypatch) -> None:
    """A real ``mlflow server`` stops and starts again while the heartbeat's request sits in MLflow's retry backoff
    (the client's usual retries, not the tests' none): once the server answers, the lease has gone unrenewed for more
    than FENCE_FACTOR intervals, but the server does not refuse this holder; the watchdog's own renewal goes through
    and the holder keeps the sweep (CI, stop 27: a sweep stopped at a tracking server's restart)."""
    from tests.tracking.restartable_mlflow import Server

    for key, value in {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "7", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "2",
                       "MLFLOW_HTTP_REQUEST_TIMEOUT": "5", "MLFLOW_DISABLE_TELEMETRY": "true"}.items():
        monkeypatch.setenv(key, value)
    server = Server(tmp_path, mlflow_template)
    server.start()
    try:
        client = MlflowClient(tracking_uri=server.uri)
        run_id = client.create_run(client.create_experiment("lease")).info.run_id
        interval = 4.0  # the watchdog's own renewal gets (EXPIRY - FENCE) * interval / 2 = 2 s: a restarted server's
        # first store request (its store is built then) took over the 1 s that a 2 s interval left (flake review 14)
        lease = SweepLease(client, run_id, interval_s=interval, settle_s=0.0, sweep_name="toy-1a2b")
        lease.acquire()
        server.stop()
        time.sleep(2 * interval)  # a heartbeat fails and waits in the backoff (4 s, then 8 s)
        server.start()
        back = time.time()
        deadline = time.monotonic() + 3 * interval
        while time.monotonic() < deadline and lease.lost is None:
            time.sleep(0.1)
        assert lease.lost is None, lease.lost
        assert LeaseRecord.parse(client.get_run(run_id).data.tags[LEASE_TAG]).heartbeat >= back - 0.5, \
            "the lease was not renewed once the server was back"
        lease.release()
        assert LEASE_TAG not in client.get_run(run_id).data.tags
    finally:
        server.stop()


def test_a_holder_back_from_an_outage_never_overwrites_the_new_holder_and_stops(parent) -> None:
    """Driver A loses MLflow for longer than the expiry; B takes the sweep over; A's next heartbeat finds B's
    token: it writes nothing, stops beating and tells its sweep to stop."""
    client, run_id = parent
    told: list[str] = []
    a = SweepLease(client, run_id, interval_s=2.0, settle_s=0.0, sweep_name="toy-1a2b", on_lost=told.append)
    a.acquire()
    # A's outage: its last heartbeat is now older than 3 intervals (what A's tag reads after 6 s without one)
    client.set_tag(run_id, LEASE_TAG, replace(a.current(), heartbeat=time.time() - 10).to_json())
    b = SweepLease(client, run_id, interval_s=30.0, settle_s=0.0)
    b.acquire()  # expired: B takes it over, as `sentsweep resume` does
    try:
        deadline = time.monotonic() + 10
        while a.lost is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert a.lost is not None, "A's heartbeat noticed the takeover"
        assert a._thread is not None and not a._thread.is_alive(), "A's heartbeat stopped"
        time.sleep(0.5)
        held = b.current()
        assert held is not None and held.token == b.token, "A never rewrote B's lease"
        assert told == [a.lost] and "took over sweep toy-1a2b's lease by " in a.lost and a.lost.endswith(
            "; this one stops") and b.token not in a.lost
        a.release()
        assert b.current().token == b.token, "A's release leaves B's lease alone"
    finally:
        b.release()
    assert LEASE_TAG not in client.get_run(run_id).data.tags


def test_a_lost_lease_ends_tunes_loop_at_its_next_step() -> None:
    stops = StopSignals()
    watch = StopWatch()
    with graceful_stops(stops):
        watch.on_step_end(iteration=1, trials=[])  # held: nothing happens
        threading.Thread(target=stops.supersede, args=("another driver took over sweep s's lease",)).start()
        deadline = time.monotonic() + 5
        while stops.superseded is None and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(LeaseLost, match="^another driver took over sweep s's lease$"):
            watch.on_step_end(iteration=2, trials=[])


def test_which_parent_runs_a_resume_continues() -> None:
    assert {"interrupted", "crashed"} == RESUMABLE and RUN_STATUS["interrupted"] == "KILLED"
    assert is_resumable("RUNNING", {})  # a killed driver; its lease decides whether now
    assert is_resumable("KILLED", {"sentsweep.status": "interrupted"}) and is_resumable("KILLED", {})
    assert is_resumable("FAILED", {"sentsweep.status": "crashed"})
    assert not is_resumable("FAILED", {"sentsweep.status": "failed"}) and not is_resumable("FAILED", {})
    assert not is_resumable("FINISHED", {"sentsweep.status": "finished"})


def test_a_sweep_whose_lease_was_taken_over_stops_and_leaves_the_parent_to_the_new_holder(
        tmp_path, tiny_bert_dir, tracking_uri, ray_session, monkeypatch) -> None:
    """A real toy sweep (in-process Ray, sqlite MLflow): once its trials run, another driver's token is written
    into the lease as ``acquire`` writes it. The sweep ends with :class:`LeaseLost` within a few heartbeats, the new
    holder's token stays, and the parent run is left RUNNING for the new holder (not closed as interrupted)."""
    from sentsweep.platform import lease as lease_module
    from sentsweep.platform.sweep import run_sweep
    from sentsweep.tracking.vocabulary import REASON_TAG, ROLE_TAG
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    monkeypatch.setattr(lease_module, "HEARTBEAT_S", 2.0)  # fenced after 4 s unrenewed: a slow write is no outage
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 40, "sleep_s": 0.5})
    client = MlflowClient(tracking_uri=tracking_uri)
    other = LeaseRecord("bob", "node-7", 4242, "b-token", time.time(), 30.0)
    taken: list[str] = []

    def take_over() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not taken:
            experiment = client.get_experiment_by_name("toy")
            if experiment is not None:
                parents = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'sweep'")
                trials = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
                if parents and LEASE_TAG in parents[0].data.tags and trials:
                    client.set_tag(parents[0].info.run_id, LEASE_TAG,
                                   replace(other, heartbeat=time.time()).to_json())
                    taken.append(parents[0].info.run_id)
                    return
            time.sleep(0.3)

    thief = threading.Thread(target=take_over, daemon=True)
    thief.start()
    with pytest.raises(LeaseLost, match=r"another driver \(bob@node-7 \(pid 4242\)\) took over sweep toy-[\w-]+'s "
                                        r"lease by .*; this one stops"):
        run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                  echo=lambda line: None)
    thief.join(timeout=5)
    assert taken, "the trials ran and the lease was taken over"
    parent = client.get_run(taken[0])
    assert LeaseRecord.parse(parent.data.tags[LEASE_TAG]).token == "b-token", "the new holder's lease stays"
    assert parent.info.status == "RUNNING" and parent.data.tags[STATUS_TAG] == "running", "left to the new holder"
    assert not [key for key in parent.data.metrics if key.startswith("trials_")], "no totals of a sweep not held"
    runs = client.search_runs([parent.info.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    assert runs and not [r for r in runs if r.data.tags.get(REASON_TAG, "").startswith("interrupted with the sweep")]
