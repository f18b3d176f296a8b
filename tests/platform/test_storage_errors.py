"""A storage that fails is not a missing file, and a write cut short leaves the old file: the sweep folder's state
(budget count, confirmation state, manifest) is never read as absent because S3 blipped, never reset, and never
left half-written on a local disk (real files; S3's failures from :mod:`tests.platform.flaky_storage`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from ray.tune.experiment import Trial

from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform.budget import BUDGET_FILE, BudgetCallback, BudgetMeter, metering, spent_at
from sentsweep.platform.config import BudgetConfig, SweepConfig
from sentsweep.platform.confirmation import read_state, write_state
from sentsweep.platform.confirmation_stats import STATE_FILE
from sentsweep.platform.storage import MANIFEST, SweepManifest, locate
from sentsweep.platform.sweep import _state_after
from sentsweep.trainables.method import ATTEMPT_SECONDS_KEY, ATTEMPT_STARTED_KEY, GPUS_KEY
from tests.platform.flaky_storage import flaky_location

SPENT = {"compute_seconds": 7200.0, "gpu_seconds": 7200.0, "trial_seconds": 3600.0, "wall_seconds": 4000.0,
         "sessions": 2, "spent": "budget: gpu_hours 2 spent", "attempts": {}}


def _report(started: float, seconds: float) -> dict[str, float]:
    return {ATTEMPT_STARTED_KEY: started, ATTEMPT_SECONDS_KEY: seconds, GPUS_KEY: 1.0}


# -- reading: only a missing file is absent ---------------------------------------------------------------------
def test_a_storage_blip_reading_the_budget_count_is_tried_again(tmp_path: Path) -> None:
    location, storage = flaky_location(tmp_path)
    (tmp_path / "sweep" / BUDGET_FILE).write_text(json.dumps(SPENT))
    storage.fail("open_input_stream", BUDGET_FILE, times=2)
    meter = BudgetMeter.load(BudgetConfig(gpu_hours=2.0), location)
    assert len(storage.failed) == 2
    assert meter.spent() and meter.count.compute_seconds == 7200.0, "the stored count, not a fresh one"


def test_an_outage_reading_the_budget_count_stops_without_resetting_it(tmp_path: Path) -> None:
    location, storage = flaky_location(tmp_path)
    stored = tmp_path / "sweep" / BUDGET_FILE
    stored.write_text(json.dumps(SPENT))
    storage.fail("open_input_stream", BUDGET_FILE, times=100)
    blip = r"^s3://sentsweep/sweep/budget.json: the storage did not answer after 3 tries \(OSError: .*NETWORK_CONN"
    with pytest.raises(StorageError, match=blip), metering(BudgetMeter.load(BudgetConfig(gpu_hours=2.0), location)):
        pass  # what a sweep does: load the count, meter the session, save it at the end
    assert json.loads(stored.read_text()) == SPENT, "the spent budget is still in the folder"
    # a missing count is a new sweep's
    assert BudgetMeter.load(BudgetConfig(gpu_hours=2.0), flaky_location(tmp_path, "new")[0]).count.sessions == 0


def test_a_storage_blip_reading_the_confirmation_state_is_not_a_stage_not_begun(tmp_path: Path) -> None:
    location, storage = flaky_location(tmp_path)
    assert read_state(location) is None  # missing: the stage has not begun
    write_state(location, {"status": "running", "candidates": []})
    storage.fail("open_input_stream", STATE_FILE, times=1)
    assert read_state(location) == {"status": "running", "candidates": []}
    storage.fail("open_input_stream", STATE_FILE, times=3)
    with pytest.raises(StorageError, match="confirmation.json: the storage did not answer"):
        read_state(location)


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


def test_a_manifest_the_storage_does_not_serve_is_not_a_missing_one(tmp_path: Path) -> None:
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
    error = StorageError("the storage did not answer", file="s3://b/s/budget.json")
    assert _state_after(error, locate(str(tmp_path))) == "crashed"
    assert _state_after(ConfigError("bad"), locate(str(tmp_path))) == "failed"


def test_a_worker_reading_the_count_tries_again(tmp_path: Path) -> None:
    location, storage = flaky_location(tmp_path)
    fs, path = location.resolve()
    assert not spent_at(fs, f"{path}/{BUDGET_FILE}")  # no count yet
    (tmp_path / "sweep" / BUDGET_FILE).write_text(json.dumps(SPENT))
    storage.fail("open_input_stream", BUDGET_FILE, times=1)
    assert spent_at(fs, f"{path}/{BUDGET_FILE}"), "a blip is not 'no count'"
    storage.fail("open_input_stream", BUDGET_FILE, times=3)  # a lasting outage: the trial starts (documented)
    assert not spent_at(fs, f"{path}/{BUDGET_FILE}")


# -- writing: whole or not at all ------------------------------------------------------------------------------
def test_a_local_write_cut_short_leaves_the_old_file(tmp_path: Path) -> None:
    location = locate(str(tmp_path / "sweep"))
    location.write_text(STATE_FILE, '{"status": "done"}')
    with pytest.raises(UnicodeEncodeError):  # fails mid-write, after the file was opened
        location.write_text(STATE_FILE, '{"status": "running", "note": "\ud800"}')
    assert read_state(location) == {"status": "done"}
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == [STATE_FILE], "no temporary file left"


# -- saving from Tune's callbacks: an outage does not end the sweep ----------------------------------------------
def test_a_failed_save_in_a_callback_is_retried_at_the_next_tick(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    location, storage = flaky_location(tmp_path)
    stored = tmp_path / "sweep" / BUDGET_FILE
    callback, trial = BudgetCallback(), Trial("__fake", trial_id="t1", stub=True)
    with metering(BudgetMeter(BudgetConfig(gpu_hours=1.0), location, retry_save_s=0.0)) as meter:
        storage.fail("open_output_stream", BUDGET_FILE, times=3)
        with caplog.at_level(logging.WARNING, logger="sentsweep.platform.budget"):
            callback.on_trial_result(1, [trial], trial, _report(100.0, 10.0))
            callback.on_trial_result(2, [trial], trial, _report(100.0, 20.0))
            callback.on_step_end(2, [trial])
        assert len(storage.failed) == 3 and meter.unsaved is not None
        assert meter.count.compute_seconds == 20.0, "counted in memory"
        warnings = [r.getMessage() for r in caplog.records if "could not save the budget count" in r.getMessage()]
        assert len(warnings) == 1 and "s3://sentsweep/sweep/budget.json" in warnings[0]
        callback.on_step_end(3, [trial])  # the storage answers again: saved at the next tick, not 10 s later
        assert meter.unsaved is None and json.loads(stored.read_text())["compute_seconds"] == 20.0


def test_a_storage_blip_reading_the_study_is_not_a_study_never_saved(tmp_path: Path) -> None:
    """The saved Optuna study (warm starts and the plots read it): absent is None, a blip is tried again, an outage
    is a StorageError (it was read as "no saved study yet": a warm start refused, plots without the study), a
    cut-short file one line naming it."""
    import optuna

    from sentsweep.platform.study_json import STUDY_FILE, study_to_json

    location, storage = flaky_location(tmp_path)
    assert location.load_study() is None
    study = optuna.create_study(direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"lr": 2e-5}, value=80.0,
                                              distributions={"lr": optuna.distributions.FloatDistribution(1e-6, 1e-4)}))
    (tmp_path / "sweep" / STUDY_FILE).write_text(study_to_json(study))
    storage.fail("open_input_stream", STUDY_FILE, times=1)
    assert location.load_study().trials[0].params == {"lr": 2e-5}
    storage.fail("open_input_stream", STUDY_FILE, times=3)
    with pytest.raises(StorageError, match=f"{STUDY_FILE}: the storage did not answer"):
        location.load_study()
    (tmp_path / "sweep" / STUDY_FILE).write_text('{"directions": ["MAXIMIZE"], "tri')
    with pytest.raises(ConfigError, match=f"^s3://sentsweep/sweep/{STUDY_FILE}: unreadable {STUDY_FILE}"):
        location.load_study()
