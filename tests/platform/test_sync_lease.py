"""``sentsweep sync`` takes the sweep's lease: refused while a driver runs the sweep (that driver writes its runs
itself), and it delivers what a session saved in the folder once the driver is gone (real sqlite MLflow)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.lease import LEASE_TAG, LeaseHeldError, SweepLease
from sentsweep.platform.storage import SweepManifest, locate
from sentsweep.platform.sweep_sync import sync_sweep
from sentsweep.tracking.run_writes import PENDING_FILE


def test_sync_is_refused_while_a_driver_holds_the_sweep_and_delivers_once_it_is_gone(
        tmp_path: Path, tracking_uri: str) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    run_id = client.create_run(experiment).info.run_id
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    config = SweepConfig(name="s", method="cosent", storage_path=str(tmp_path))
    locate(str(sweep_dir)).write_manifest(SweepManifest(
        sweep_name="s", config=config.model_dump(mode="json"), parent_run_id=run_id, experiment_id=experiment,
        tracking_uri=tracking_uri, created=time.time()), config)
    saved = [{"op": "tags", "run": run_id, "tags": {"left": "by the driver"}}]
    (sweep_dir / PENDING_FILE).write_text(json.dumps(saved))

    driver = SweepLease(client, run_id, settle_s=0.0, sweep_name="s")  # a live driver (this process)
    driver.acquire()
    try:
        with pytest.raises(LeaseHeldError, match="the sweep is being run by .* heartbeat"):
            sync_sweep(str(sweep_dir))
        assert "left" not in client.get_run(run_id).data.tags, "nothing delivered beside the driver"
    finally:
        driver.release()
    synced = sync_sweep(str(sweep_dir))
    tags = client.get_run(run_id).data.tags
    assert not synced.waiting and synced.writes == 1 and tags["left"] == "by the driver"
    assert not (sweep_dir / PENDING_FILE).exists()
    assert LEASE_TAG not in tags, "sync gave its lease back"


def test_a_driver_ending_in_a_tracking_outage_notes_its_lease_released_in_the_sweep_folder(
        tmp_path: Path, tracking_uri: str) -> None:
    """Its tag cannot be removed while the server answers nobody: the token goes to the sweep folder, and a resume
    or sync reading that folder takes the sweep at once instead of waiting for the lease to expire."""
    from tools.harness.processes import free_port

    client = MlflowClient(tracking_uri=tracking_uri)
    run_id = client.create_run(client.create_experiment("e")).info.run_id
    location = locate(str(tmp_path))
    driver = SweepLease(client, run_id, settle_s=0.0, sweep_name="s", location=location)
    driver.acquire()
    driver.client = MlflowClient(tracking_uri=f"http://127.0.0.1:{free_port()}")  # the server is gone
    started = time.monotonic()
    driver.release()
    assert time.monotonic() - started < 10, "no waiting on MLflow's retries at the end of a sweep"
    assert LEASE_TAG in client.get_run(run_id).data.tags
    with pytest.raises(LeaseHeldError):  # without the sweep folder: the lease is live for 90 s
        SweepLease(client, run_id, settle_s=0.0).acquire()
    successor = SweepLease(client, run_id, settle_s=0.0, location=location)
    successor.acquire()
    successor.release()
    assert LEASE_TAG not in client.get_run(run_id).data.tags


def test_a_release_note_planted_with_the_public_token_frees_no_live_lease(tmp_path: Path, tracking_uri: str) -> None:
    """The lease's token is in a tag every MLflow reader sees; a note in the shared bucket naming it (or any secret
    but the holder's) leaves the lease held (review 13, finding 7)."""
    import json

    from sentsweep.platform.lease import RELEASED_FILE, LeaseRecord

    client = MlflowClient(tracking_uri=tracking_uri)
    run_id = client.create_run(client.create_experiment("e")).info.run_id
    location = locate(str(tmp_path))
    driver = SweepLease(client, run_id, settle_s=0.0, sweep_name="s", location=location)
    driver.acquire()
    try:
        record = LeaseRecord.parse(client.get_run(run_id).data.tags[LEASE_TAG])
        assert record.release_hash and driver.token not in record.release_hash
        (tmp_path / RELEASED_FILE).write_text(json.dumps({"released": [record.token, record.release_hash],
                                                          "tokens": [record.token]}))
        with pytest.raises(LeaseHeldError):
            SweepLease(client, run_id, settle_s=0.0, location=location).acquire()
    finally:
        driver.release()
