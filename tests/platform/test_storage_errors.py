"""A storage that fails is not a missing file, and a write cut short leaves the old file: the sweep folder's state
(confirmation state, manifest) is never read as absent because S3 blipped, never reset, and never
left half-written on a local disk (real files; S3's failures from :mod:`tests.platform.flaky_storage`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform import location as location_module
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stage import STATE_FILE, read_state, write_state
from sentsweep.platform.driver.sweep import _state_after
from sentsweep.platform.location import MANIFEST, READ_BACKOFF_S, SweepManifest, locate
from tests.platform.flaky_storage import flaky_location


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses a read takes between its tries, recorded instead of waited."""
    taken: list[float] = []
    monkeypatch.setattr(location_module, "pause", taken.append)
    return taken


# -- reading: only a missing file is absent ---------------------------------------------------------------------
def test_a_storage_blip_reading_the_confirmation_state_is_not_a_stage_not_begun(tmp_path: Path, pauses) -> None:
    location, storage = flaky_location(tmp_path)
    assert read_state(location) is None  # missing: the stage has not begun
    assert pauses == []  # a missing file is not tried again
    write_state(location, {"status": "running", "candidates": []})
    storage.fail("open_input_stream", STATE_FILE, times=1)
    assert read_state(location) == {"status": "running", "candidates": []}
    assert pauses == [READ_BACKOFF_S]
    storage.fail("open_input_stream", STATE_FILE, times=3)
    with pytest.raises(StorageError, match="confirmation.json: the storage did not answer"):
        read_state(location)
    assert pauses == [READ_BACKOFF_S, READ_BACKOFF_S, 2 * READ_BACKOFF_S]  # doubled before each further try


def test_a_cut_short_confirmation_state_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text('{"status": "runn')
    with pytest.raises(ConfigError, match=rf"^{tmp_path}/confirmation.json: unreadable confirmation.json"):
        read_state(locate(str(tmp_path)))


def test_a_cut_short_manifest_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text('{"sweep_name": "demo", "config": {"na')
    with pytest.raises(ConfigError, match=rf"^{tmp_path}/{MANIFEST}: unreadable sweep manifest \(.*JSON") as raised:
        locate(str(tmp_path)).read_manifest()
    assert "\n" not in str(raised.value)
    (tmp_path / MANIFEST).write_text('{"sweep_name": "demo"}')
    with pytest.raises(ConfigError, match=r"unreadable sweep manifest \(config: Field required \(4 more errors\)\)"):
        locate(str(tmp_path)).read_manifest()


@pytest.mark.parametrize("command", ["resume", "sync"])
def test_a_stored_config_that_does_not_validate_is_one_line_naming_the_manifest_and_field(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], private_cache: Path) -> None:
    from sentsweep.cli import main

    (tmp_path / MANIFEST).write_text(json.dumps({
        "sweep_name": "demo-1", "config": {"name": "demo", "method": "cosent", "num_samples": "many"},
        "parent_run_id": "p", "experiment_id": "1", "tracking_uri": "sqlite:///x.db", "created": 0}))
    assert main([command, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sentsweep {command}: error: {tmp_path}/{MANIFEST}: field 'config.num_samples': the sweep's "
                          "stored config is invalid (Input should be a valid integer")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_manifest_the_storage_does_not_serve_is_not_a_missing_one(tmp_path: Path, pauses) -> None:
    location, storage = flaky_location(tmp_path)
    with pytest.raises(ConfigError, match="not a sentsweep sweep folder"):
        location.read_manifest()
    config = SweepConfig(name="demo", method="cosent", storage_path=str(tmp_path))
    location.write_manifest(SweepManifest(sweep_name="sweep", config=config.model_dump(mode="json"),
                                          parent_run_id="p", experiment_id="1", tracking_uri="sqlite:///x.db",
                                          created=0), config)
    storage.fail("open_input_stream", MANIFEST, times=3)
    with pytest.raises(StorageError, match="sentsweep_sweep.json: the storage did not answer"):
        location.read_manifest()


def test_a_sweep_stopped_by_the_storage_is_resumable(tmp_path: Path) -> None:
    error = StorageError("the storage did not answer", file="s3://b/s/confirmation.json")
    assert _state_after(error, locate(str(tmp_path))) == "crashed"
    assert _state_after(ConfigError("bad"), locate(str(tmp_path))) == "failed"


# -- writing: whole or not at all ------------------------------------------------------------------------------
def test_a_local_write_cut_short_leaves_the_old_file(tmp_path: Path) -> None:
    location = locate(str(tmp_path / "sweep"))
    location.write_text(STATE_FILE, '{"status": "done"}')
    with pytest.raises(UnicodeEncodeError):  # fails mid-write, after the file was opened
        location.write_text(STATE_FILE, '{"status": "running", "note": "\ud800"}')
    assert read_state(location) == {"status": "done"}
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == [STATE_FILE], "no temporary file left"


