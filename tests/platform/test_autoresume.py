"""``sentsweep sweep --resume-interrupted`` finds the config's newest sweep folder and continues it only
when its MLflow parent run did not finish (real sweep folders and manifests, a real MLflow store)."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient

from sentsweep.platform.autoresume import interrupted_sweep, previous_sweep, sweep_folders
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.storage import SweepManifest, new_sweep_location


def _config(tmp_path: Path, tracking_uri: str, name: str = "demo") -> SweepConfig:
    return SweepConfig(name=name, method="cosent", storage_path=str(tmp_path / "results"),
                       tracking={"uri": tracking_uri, "experiment": "auto"})


def _sweep(config: SweepConfig, created: float, status: str) -> str:
    """A sweep folder with its manifest, and its parent run left ``status`` (RUNNING: a killed driver)."""
    client = MlflowClient(tracking_uri=config.tracking.uri)
    found = client.get_experiment_by_name(config.tracking.experiment)
    experiment = found.experiment_id if found else client.create_experiment(config.tracking.experiment)
    run = client.create_run(experiment)
    if status != "RUNNING":
        client.set_terminated(run.info.run_id, status)
    location = new_sweep_location(config, now=created, suffix=f"{int(created) % 65536:04x}")
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id=run.info.run_id, experiment_id=experiment,
                                          tracking_uri=config.tracking.uri, created=created), config)
    return location.uri


def test_only_the_newest_unfinished_sweep_of_the_config_is_resumed(tmp_path: Path, tracking_uri: str) -> None:
    config = _config(tmp_path, tracking_uri)
    assert sweep_folders(config) == [] and interrupted_sweep(config) is None

    _sweep(config, 1_700_000_000, "FINISHED")
    assert interrupted_sweep(config) is None

    killed = _sweep(config, 1_700_000_100, "RUNNING")
    assert interrupted_sweep(config) == killed
    _sweep(_config(tmp_path, tracking_uri, name="demo-2"), 1_700_000_200, "FAILED")  # another config's
    (tmp_path / "results" / "demo-20991231-235959-ffff").mkdir()  # no manifest: not a sweep
    assert interrupted_sweep(config) == killed
    assert len(sweep_folders(config)) == 3

    crashed = _sweep(config, 1_700_000_300, "FAILED")
    previous = previous_sweep(config)
    assert previous is not None and (previous.uri, previous.status) == (crashed, "FAILED")

    _sweep(config, 1_700_000_400, "FINISHED")
    assert interrupted_sweep(config) is None, "an older unfinished sweep is not picked up"
