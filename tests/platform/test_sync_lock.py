"""``sentsweep sync`` takes the sweep folder's lock: refused while a driver runs the sweep (that driver writes its
runs itself), and it delivers what a session saved in the folder once the driver is gone (real sqlite MLflow)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.sync import sync_sweep
from sentsweep.platform.folder.lock import LockHeldError, LockRecord, SweepLock
from sentsweep.platform.folder.lock_stores import LOCK_FILE
from sentsweep.platform.location import SweepManifest, locate
from sentsweep.platform.tracking.run_writes import PENDING_FILE


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
    saved = [{"op": "tags", "run": run_id, "tags": {"left": "by the driver"}}]
    (sweep_dir / PENDING_FILE).write_text(json.dumps(saved))

    driver = SweepLock.for_folder(location, "s")  # a live driver (this process)
    driver.acquire()
    try:
        with pytest.raises(LockHeldError, match="the sweep is being run by .* heartbeat"):
            sync_sweep(str(sweep_dir))
        assert "left" not in client.get_run(run_id).data.tags, "nothing delivered beside the driver"
    finally:
        driver.release()
    synced = sync_sweep(str(sweep_dir))
    tags = client.get_run(run_id).data.tags
    assert not synced.waiting and synced.writes == 1 and tags["left"] == "by the driver"
    assert not (sweep_dir / PENDING_FILE).exists()
    held = LockRecord.parse((sweep_dir / LOCK_FILE).read_bytes())
    assert held.released and held.token != driver.token, "sync took the lock, then gave it back"
