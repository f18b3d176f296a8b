"""``sentsweep sync`` takes the sweep folder's lock: refused while a driver runs the sweep (that driver delivers its
journals itself; both would log every entry twice), and it delivers once the driver is gone (real sqlite MLflow)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.lock_stores import LOCK_FILE
from sentsweep.platform.storage import SweepManifest, locate
from sentsweep.platform.sweep_lock import LockHeldError, LockRecord, SweepLock
from sentsweep.platform.tracking_journals import sync_sweep
from sentsweep.tracking.journal import DRIVER_JOURNALS, PARENT_JOURNAL, Journal


def test_sync_is_refused_while_a_driver_holds_the_sweep_and_delivers_once_it_is_gone(
        tmp_path: Path, tracking_uri: str) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    run_id = client.create_run(experiment).info.run_id
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    config = SweepConfig(name="s", method="cosent", storage_path=str(tmp_path))
    location = locate(str(sweep_dir))
    location.write_manifest(SweepManifest(
        sweep_name="s", config=config.model_dump(mode="json"), parent_run_id=run_id, experiment_id=experiment,
        tracking_uri=tracking_uri, created=time.time()), config)
    Journal(sweep_dir / DRIVER_JOURNALS / PARENT_JOURNAL, run_id=run_id).append(
        {"op": "tags", "tags": {"left": "by the driver"}, "time_ms": int(time.time() * 1000)})

    driver = SweepLock.for_folder(location, "s")  # a live driver (this process)
    driver.acquire()
    try:
        with pytest.raises(LockHeldError, match="the sweep is being run by .* heartbeat"):
            sync_sweep(str(sweep_dir), echo=lambda line: None)
        assert "left" not in client.get_run(run_id).data.tags, "nothing delivered beside the driver"
    finally:
        driver.release()
    replayed, _ = sync_sweep(str(sweep_dir), echo=lambda line: None)
    tags = client.get_run(run_id).data.tags
    assert replayed.pending == 0 and tags["left"] == "by the driver"
    held = LockRecord.parse((sweep_dir / LOCK_FILE).read_bytes())
    assert held.released and held.token != driver.token, "sync took the lock, then gave it back"
