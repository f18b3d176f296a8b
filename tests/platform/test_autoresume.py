"""``sentsweep sweep --resume-interrupted`` finds the newest sweep folder of the same identity (config name,
owner) and continues it only when its MLflow parent run is resumable: interrupted, crashed or left RUNNING,
never finished or failed for a deterministic reason (real sweep folders and manifests, a real MLflow store)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.errors import StorageError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.resume import interrupted_sweep, previous_sweep, sweep_folders
from sentsweep.platform.location import MANIFEST, OWNER_ENV, SweepManifest, locate, new_sweep_location, sweep_owner
from sentsweep.tracking.vocabulary import STATUS_TAG
from tests.platform.capture_server import capturing_server


def _config(tmp_path: Path, tracking_uri: str, name: str = "demo") -> SweepConfig:
    return SweepConfig(name=name, method="cosent", storage_path=str(tmp_path / "results"),
                       tracking={"uri": tracking_uri, "experiment": "auto"})


def _sweep(config: SweepConfig, created: float, status: str, state: str | None = None) -> str:
    """A sweep folder with its manifest, and its parent run left ``status`` (RUNNING: a killed driver) with
    the ``sentsweep.status`` tag ``state``."""
    client = MlflowClient(tracking_uri=config.tracking.uri)
    found = client.get_experiment_by_name(config.tracking.experiment)
    experiment = found.experiment_id if found else client.create_experiment(config.tracking.experiment)
    run = client.create_run(experiment, tags={STATUS_TAG: state} if state else None)
    if status != "RUNNING":
        client.set_terminated(run.info.run_id, status)
    location = new_sweep_location(config, now=created, suffix=f"{int(created) % 65536:04x}")
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id=run.info.run_id, experiment_id=experiment,
                                          tracking_uri=config.tracking.uri, created=created), config)
    return location.uri


@pytest.fixture(autouse=True)
def _owner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OWNER_ENV, "alice")


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

    crashed = _sweep(config, 1_700_000_300, "FAILED", "crashed")
    previous = previous_sweep(config)
    assert previous is not None and (previous.uri, previous.status) == (crashed, "FAILED")
    assert interrupted_sweep(config) == crashed

    _sweep(config, 1_700_000_350, "FAILED", "failed")  # a user error or no trial finished: start anew
    assert interrupted_sweep(config) is None
    stopped = _sweep(config, 1_700_000_360, "KILLED", "interrupted")
    assert interrupted_sweep(config) == stopped

    _sweep(config, 1_700_000_400, "FINISHED")
    assert interrupted_sweep(config) is None, "an older unfinished sweep is not picked up"


def test_another_owners_sweep_is_not_resumed_and_a_changed_config_is_found(tmp_path: Path, tracking_uri: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tmp_path, tracking_uri)
    mine = _sweep(config, 1_700_000_000, "RUNNING")
    assert locate(mine).read_manifest().owner == "alice"  # stamped when the folder was made
    monkeypatch.setenv(OWNER_ENV, "bob")
    bobs = _sweep(config, 1_700_000_100, "RUNNING")  # the same config, newer, another user's
    assert locate(bobs).read_manifest().owner == "bob"
    assert interrupted_sweep(config) == bobs
    assert interrupted_sweep(config, owner="alice") == mine, "alice's own, not bob's newer one"
    monkeypatch.setenv(OWNER_ENV, "carol")
    assert interrupted_sweep(config) is None, "carol has no sweep of this config"

    changed = config.model_copy(update={"num_samples": config.num_samples + 1})
    # Found by name and owner: the resume then refuses the change (tests/platform/test_resume_config.py).
    assert interrupted_sweep(changed, owner="alice") == mine


def test_the_owner_comes_from_the_environment() -> None:
    assert sweep_owner({OWNER_ENV: "team-a/alice", "USER": "ray"}) == "team-a/alice"
    assert sweep_owner({"USER": "ray"}) == "ray"
    assert sweep_owner({"LOGNAME": "bob"}) == "bob"
    assert sweep_owner({})  # the login name of this process, or "unknown"


def test_a_manifest_that_cannot_be_read_stops_the_search(tmp_path: Path, tracking_uri: str) -> None:
    """A manifest the storage does not serve (an S3 outage; here a local read that fails with another error than
    "no such file") may be the sweep to continue: neither an older sweep nor a new one is started in its place."""
    config = _config(tmp_path, tracking_uri)
    older = _sweep(config, 1_700_000_000, "RUNNING")
    newest = Path(_sweep(config, 1_700_000_100, "FAILED", "crashed"))
    (newest / MANIFEST).unlink()
    (newest / MANIFEST).mkdir()  # reading it raises OSError ("is a directory"), not FileNotFoundError
    with pytest.raises(StorageError, match=rf"^{newest}/{MANIFEST}: the storage did not answer after 3 tries "
                                           r".*--resume-interrupted cannot tell whether this folder is the sweep"):
        interrupted_sweep(config)
    (newest / MANIFEST).rmdir()
    (newest / MANIFEST).write_text('{"sweep_name": "demo-')  # cut short: not a sweep's manifest, passed over
    assert interrupted_sweep(config) == older


def test_a_folder_naming_another_tracking_server_is_skipped_without_contacting_it(
        tmp_path: Path, tracking_uri: str) -> None:
    """A manifest planted in the shared storage, newest, of the same name and owner, naming a server that records
    what it is sent (the login MLflow's client sends with every request): it is skipped, and nothing reaches it."""
    import json

    with capturing_server() as (capture_uri, heard):
        config = _config(tmp_path, tracking_uri)
        killed = _sweep(config, 1_700_000_100, "RUNNING")
        planted = tmp_path / "results" / "demo-20991231-235959-ffff"
        planted.mkdir()
        manifest = json.loads((Path(killed) / MANIFEST).read_text())
        manifest.update(tracking_uri=capture_uri, created=4e9)
        (planted / MANIFEST).write_text(json.dumps(manifest))
        assert interrupted_sweep(config) == killed
        assert heard == []
