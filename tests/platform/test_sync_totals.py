"""``sentsweep sync`` leaves the sweep run's totals as the sweep folder holds them: it corrects totals an earlier end
wrote when the last end could not write its own (an outage), and writes nothing when they agree (real sqlite
MLflow, a planted Tune experiment folder)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from mlflow import MlflowClient

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.sync import sync_sweep
from sentsweep.platform.location import SweepManifest, locate
from sentsweep.platform.tracking.trial_runs import RESULTS_FILE, TrialRuns


def _final(trial_id: str, seconds: float) -> dict:
    return {"trial_id": trial_id, "training_iteration": 1, "step": 2, "stsb_dev": 80.0, "time_total_s": seconds,
            "final": 1.0, "done": True}


def _plant_sweep(folder: Path, tracking_uri: str, saved: dict[str, str]) -> str:
    """A sweep folder whose trials a, b and c finished (their reports), Tune's snapshot holding ``saved`` (trial id
    -> status), and its sweep run; the run's id."""
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    run_id = client.create_run(experiment).info.run_id
    config = SweepConfig(name="s", method="cosent", storage_path=str(folder.parent))
    locate(str(folder)).write_manifest(SweepManifest(
        sweep_name="s", config=config.model_dump(mode="json"), parent_run_id=run_id, experiment_id=experiment,
        tracking_uri=tracking_uri, created=time.time()), config)
    for trial_id, seconds in (("a", 10.0), ("b", 20.0), ("c", 30.0)):
        (folder / f"train_{trial_id}").mkdir()
        (folder / f"train_{trial_id}" / RESULTS_FILE).write_text(json.dumps(_final(trial_id, seconds)) + "\n")
    data = [[json.dumps({"trial_id": t, "status": s, "config": {}}),
             json.dumps({"last_result": _final(t, 0.0) if s == "TERMINATED" else {}})] for t, s in saved.items()]
    (folder / "experiment_state-2026-11-30_09-00-00.json").write_text(json.dumps({"trial_data": data}))
    return run_id


def test_sync_corrects_the_totals_an_earlier_end_left_and_writes_them_once(tmp_path: Path, tracking_uri: str) -> None:
    # c was created after Tune's last snapshot (a crash): its folder's report still counts it
    run_id = _plant_sweep(tmp_path / "sweep", tracking_uri, {"a": "TERMINATED", "b": "RUNNING"})
    client = MlflowClient(tracking_uri=tracking_uri)
    stale = {"trials_finished": 1.0, "trials_pruned": 1.0, "trials_total": 2.0}  # an interrupted end's
    TrialRuns(client, client.get_run(run_id).info.experiment_id, run_id).log_totals(stale)

    assert not sync_sweep(str(tmp_path / "sweep")).waiting
    metrics = client.get_run(run_id).data.metrics
    assert {k: metrics[k] for k in ("trials_finished", "trials_pruned", "trials_running", "trials_total")} == {
        "trials_finished": 3.0, "trials_pruned": 0.0, "trials_running": 0.0, "trials_total": 3.0}
    assert metrics["trial_seconds"] == 60.0, "the seconds of each trial's last report in its folder"

    sync_sweep(str(tmp_path / "sweep"))  # again: the totals agree, nothing is written
    assert len(client.get_metric_history(run_id, "trials_finished")) == 2


def test_sync_leaves_totals_that_agree_with_the_folder(tmp_path: Path, tracking_uri: str) -> None:
    run_id = _plant_sweep(tmp_path / "sweep", tracking_uri, {"a": "TERMINATED", "b": "TERMINATED", "c": "TERMINATED"})
    client = MlflowClient(tracking_uri=tracking_uri)
    ended = {"trials_finished": 3.0, "trials_pruned": 0.0, "trials_stopped": 0.0, "trials_not_started": 0.0,
             "trials_failed": 0.0, "trials_running": 0.0, "trials_pending": 0.0, "trials_total": 3.0,
             "trial_seconds": 60.0, "gpu_seconds": 0.0}  # the end's own
    TrialRuns(client, client.get_run(run_id).info.experiment_id, run_id).log_totals(ended)
    sync_sweep(str(tmp_path / "sweep"))
    assert all(len(client.get_metric_history(run_id, key)) == 1 for key in ended)


def test_sync_of_a_folder_whose_snapshot_was_cut_short_names_the_file(tmp_path: Path, tracking_uri: str) -> None:
    """A snapshot a kill or a full disk cut short is the folder's fault, not MLflow's: one line naming it, nothing
    written (sync would otherwise report an MLflow outage and exit 1 at every try)."""
    import pytest

    from sentsweep.errors import ConfigError
    from sentsweep.tracking.vocabulary import PARENT_TAG

    run_id = _plant_sweep(tmp_path / "sweep", tracking_uri, {"a": "TERMINATED", "b": "RUNNING"})
    (snapshot,) = (tmp_path / "sweep").glob("experiment_state-*.json")
    snapshot.write_bytes(snapshot.read_bytes()[:40])
    with pytest.raises(ConfigError, match=f"{snapshot.name}.*does not parse"):
        sync_sweep(str(tmp_path / "sweep"))
    client = MlflowClient(tracking_uri=tracking_uri)
    assert client.search_runs([client.get_run(run_id).info.experiment_id], f"tags.`{PARENT_TAG}` = '{run_id}'") \
        == []
