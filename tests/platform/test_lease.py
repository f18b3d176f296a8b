"""The lease on a sweep's parent run (real MLflow store): one holder at a time, named when another process is
refused; a heartbeat keeps it alive, a stale one expires, releasing removes it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from mlflow import MlflowClient

from sentsweep.platform.lease import LEASE_TAG, LeaseHeldError, LeaseRecord, SweepLease
from sentsweep.platform.sweep_state import RESUMABLE, RUN_STATUS, is_resumable


@pytest.fixture
def parent(tracking_uri: str) -> tuple[MlflowClient, str]:
    client = MlflowClient(tracking_uri=tracking_uri)
    return client, client.create_run(client.create_experiment("lease")).info.run_id


def test_a_live_lease_refuses_a_second_holder_by_name(parent) -> None:
    client, run_id = parent
    with SweepLease(client, run_id, interval_s=0.2, settle_s=0.0) as first:
        record = first.current()
        assert record is not None and record.pid == os.getpid() and record.token == first.token
        beat = record.heartbeat
        time.sleep(0.7)
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
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = LeaseRecord("bob", socket.gethostname(), int(gone.stdout), "old", time.time(), 30.0)
    assert here.expired(), "a fresh lease of a process of this host that is gone"


def test_which_parent_runs_a_resume_continues() -> None:
    assert {"interrupted", "crashed"} == RESUMABLE and RUN_STATUS["interrupted"] == "KILLED"
    assert is_resumable("RUNNING", {})  # a killed driver; its lease decides whether now
    assert is_resumable("KILLED", {"sentsweep.status": "interrupted"}) and is_resumable("KILLED", {})
    assert is_resumable("FAILED", {"sentsweep.status": "crashed"})
    assert not is_resumable("FAILED", {"sentsweep.status": "failed"}) and not is_resumable("FAILED", {})
    assert not is_resumable("FINISHED", {"sentsweep.status": "finished"})
