"""The confirmation stage journals in its own folder (``<sweep folder>/confirmation/``, a Tune experiment of its own):
what it could not log in an outage (its trials' metrics and status, its run's figures and end) is counted as pending
and delivered by ``sentsweep sync`` and a resume, from a local sweep folder and from a remote one on another machine
(before, they replayed the search's journals only: 0 pending, exit 0, the stage's runs left RUNNING for good). Real
sqlite MLflow store; moto's S3 server for the remote folder; a tracking URI on a closed loopback port as the
outage."""

from __future__ import annotations

import posixpath
import shutil
import time
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirmation import stage_location
from sentsweep.platform.storage import SweepLocation, SweepManifest, locate
from sentsweep.platform.sweep_tracking import SweepRun
from sentsweep.platform.tracking_journals import (
    Replayed,
    driver_journal_dir,
    replay_sweep_journals,
    stored_journals,
    sync_sweep,
)
from sentsweep.tracking.journal import TRIAL_JOURNAL
from sentsweep.tracking.journal_mirror import SET_ASIDE, JournalMirror
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.trial_logger import MlflowTrialLogger
from sentsweep.tracking.vocabulary import (
    CONFIRMATION_ROLE,
    PARENT_TAG,
    REASON_TAG,
    ROLE_TAG,
    TRIAL_ID_TAG,
    TrackingSettings,
)
from tests.tracking.restartable_mlflow import RETRY_ENV
from tools.harness.processes import LOOPBACK, free_port

TRIAL = "c1_00001"


@pytest.fixture
def down(monkeypatch) -> str:
    """A tracking URI nothing answers, the client giving up at once."""
    for key, value in RETRY_ENV.items():
        monkeypatch.setenv(key, value)
    return f"http://{LOOPBACK}:{free_port()}"


def _stage_run(client: MlflowClient, experiment_id: str, parent: str) -> str:
    """The sweep's ``confirmation`` run, as :func:`~sentsweep.platform.confirmation.open_stage_run` creates it."""
    tags = {PARENT_TAG: parent, ROLE_TAG: CONFIRMATION_ROLE}
    return client.create_run(experiment_id, tags=tags, run_name="confirmation").info.run_id


def _stage_in_an_outage(stage: SweepLocation, down: str, experiment_id: str, stage_run: str, sweep_name: str,
                        attempts: list[tuple[Path, JournalMirror | None]]) -> None:
    """The stage runs while MLflow is down: trial :data:`TRIAL`'s ``attempts`` (each its journal and copy; every
    attempt but the last lost with its node after one report), then the stage's driver records its figures and
    ends its run, as :func:`~sentsweep.platform.confirmation.run_confirmation` does."""
    settings = TrackingSettings(tracking_uri=down, experiment_id=experiment_id, parent_run_id=stage_run,
                                sweep_name=sweep_name, trial_id=TRIAL)
    for step, (journal, mirror) in enumerate(attempts, start=1):
        worker = MlflowTrialLogger(settings, journal_path=journal, mirror=mirror)
        worker.start({"lr": 0.001})
        worker.log_metrics({"stsb_dev": 80.0 + step}, step=step)
        assert worker.pending() > 0
    worker.finish("FINISHED")
    run = SweepRun(MlflowClient(tracking_uri=down), down, experiment_id, stage_run, sweep_name,
                   driver_journal_dir(stage.uri, sweep_name),
                   stored_journals(stage.uri, stage.filesystem, stage.fs_path))
    run.log_metrics({"r1_mean": 88.7, "r1_low": 87.9})
    assert not run.close("finished")


def _assert_stage_delivered(client: MlflowClient, experiment_id: str, stage_run: str, steps: int) -> None:
    run = client.get_run(stage_run)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["r1_mean"] == 88.7 and run.data.metrics["r1_low"] == 87.9
    (trial,) = client.search_runs([experiment_id], f"tags.`{TRIAL_ID_TAG}` = '{TRIAL}'")
    assert trial.info.status == "FINISHED" and trial.data.tags[PARENT_TAG] == stage_run
    history = client.get_metric_history(trial.info.run_id, "stsb_dev")
    assert sorted((m.step, m.value) for m in history) == [(s, 80.0 + s) for s in range(1, steps + 1)]


def _local_sweep(tmp_path: Path, tracking_uri: str, experiment_id: str,
                 parent: str) -> tuple[Path, SweepLocation, SweepConfig]:
    """A local sweep folder ``demo`` with its manifest (its parent run ``parent``)."""
    sweep_dir = tmp_path / "ray_results" / "demo"
    sweep_dir.mkdir(parents=True)
    location = locate(str(sweep_dir))
    config = SweepConfig(name="demo", method="cosent", storage_path=str(tmp_path / "ray_results"))
    location.write_manifest(SweepManifest(
        sweep_name="demo", config=config.model_dump(mode="json"), parent_run_id=parent, experiment_id=experiment_id,
        tracking_uri=tracking_uri, created=time.time()), config)
    return sweep_dir, location, config


def test_sync_delivers_what_the_confirmation_stage_journaled_in_an_outage(tmp_path, tracking_uri, down) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment("e")
    parent = client.create_run(experiment_id, run_name="demo").info.run_id
    stage_run = _stage_run(client, experiment_id, parent)
    sweep_dir, location, config = _local_sweep(tmp_path, tracking_uri, experiment_id, parent)
    stage = stage_location(location)
    trial_journal = Path(stage.uri) / f"train_{TRIAL}" / TRIAL_JOURNAL  # a local sweep's: in the trial's folder
    _stage_in_an_outage(stage, down, experiment_id, stage_run, "demo", [(trial_journal, None)])

    # what sync and a resume replay while the server is still down (sync's figure, exit status and pruning)
    replayed = replay_sweep_journals(str(sweep_dir), down, "demo", SweepScope(experiment_id, parent))
    # the trial's open, params, metrics and finish; the stage run's figures, tags and finish
    assert replayed == Replayed(pending=7)
    assert client.get_run(stage_run).info.status == "RUNNING"

    assert sync_sweep(str(sweep_dir), echo=lambda line: None) == (Replayed(), tracking_uri)
    _assert_stage_delivered(client, experiment_id, stage_run, steps=1)


def test_sync_on_another_machine_delivers_a_remote_stage(tmp_path, tracking_uri, private_cache, remote_sweep,
                                                         s3_endpoint, down) -> None:
    """The stage's driver journals come from their copies in ``<sweep>/confirmation/tracking-journals/``, the trial's
    from its copy in its storage folder and from the copy its next attempt set aside, on another node."""
    location, parent, experiment_id = remote_sweep
    client = MlflowClient(tracking_uri=tracking_uri)
    stage_run = _stage_run(client, experiment_id, parent)
    stage = stage_location(location)
    fs, stage_path = stage.resolve()
    trial_dir = f"train_{TRIAL}"

    def attempt(node: str) -> tuple[Path, JournalMirror]:
        mirror = JournalMirror(fs, posixpath.join(stage_path, trial_dir), set_aside=posixpath.join(stage_path,
                                                                                                    SET_ASIDE))
        return tmp_path / node / TRIAL_JOURNAL, mirror

    _stage_in_an_outage(stage, down, experiment_id, stage_run, location.name, [attempt("node-1"), attempt("node-2")])
    aside = fs.get_file_info(pyarrow.fs.FileSelector(posixpath.join(stage_path, SET_ASIDE)))
    assert [i.base_name.endswith(".jsonl") for i in aside].count(True) == 1  # node 1's, set aside by node 2
    shutil.rmtree(tmp_path / "node-1")
    shutil.rmtree(tmp_path / "node-2")
    shutil.rmtree(private_cache)  # the driver's pod is gone, and its disk with it

    assert sync_sweep(location.uri, s3_endpoint) == (Replayed(), tracking_uri)
    _assert_stage_delivered(client, experiment_id, stage_run, steps=2)


def test_the_stage_begins_and_ends_in_an_outage(tmp_path, tracking_uri, down) -> None:
    """MLflow goes down as the search ends: the stage's run was scheduled as the sweep began, so the stage needs no
    answer to begin (before, its run was created then: the sweep failed), and its params, figures, tables and the
    tags on its trials' runs are journaled (before, the tables and tags were dropped) and delivered by ``sync``."""
    from sentsweep.platform.confirmation import (
        ConfirmationOutcome,
        record,
        schedule_stage_run,
        stage_params,
        stage_run,
        stage_run_id,
    )
    from sentsweep.platform.confirmation_stats import CONFIRMS_TAG, Candidate, SeedRun

    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment("e")
    parent = client.create_run(experiment_id, run_name="demo").info.run_id
    sweep_dir, location, config = _local_sweep(tmp_path, tracking_uri, experiment_id, parent)
    journals = driver_journal_dir(str(sweep_dir), "demo")
    live = SweepRun(client, tracking_uri, experiment_id, parent, "demo", journals)
    scheduled = schedule_stage_run(live, config)
    assert client.get_run(scheduled).info.status == "SCHEDULED"
    resumed = SweepRun(client, tracking_uri, experiment_id, parent, "demo", journals)
    assert schedule_stage_run(resumed, config) == scheduled  # a resume finds it: one stage run
    client.set_tag(scheduled, REASON_TAG, "the sweep failed: ...")  # as end_stage_run leaves it; resumed by hand:
    stage_run(live, location, scheduled).record({"op": "running", "clear_reason": True})  # as the stage begins
    assert REASON_TAG not in client.get_run(scheduled).data.tags
    stage_query = f"tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'"
    assert [r.info.run_id for r in client.search_runs([experiment_id], stage_query)] == [scheduled]
    seed_run = client.create_run(experiment_id, tags={PARENT_TAG: scheduled, ROLE_TAG: "trial",
                                                      TRIAL_ID_TAG: TRIAL}).info.run_id

    # the search is over; MLflow answers nothing from here on
    sweep = SweepRun(MlflowClient(tracking_uri=down), down, experiment_id, parent, "demo", journals,
                     stage_run_id=scheduled)
    candidate = Candidate(1, "t1", {"lr": 0.001}, [SeedRun("t1", 3, 80.0, True), SeedRun(TRIAL, 4, 81.0)])
    run = stage_run(sweep, location, stage_run_id(sweep, config))
    assert not run.record({"op": "params", "params": stage_params(config, [candidate])}, {"op": "running"})
    outcome = ConfirmationOutcome(scheduled, "mean", [candidate], candidate, candidate.runs[1])
    record(outcome, config, sweep, run, echo=lambda line: None)
    assert not run.close("finished")

    assert sync_sweep(str(sweep_dir), echo=lambda line: None) == (Replayed(), tracking_uri)
    stage = client.get_run(scheduled)
    assert stage.info.status == "FINISHED" and stage.data.params["candidates"] == "t1"
    assert stage.data.metrics["r1_mean"] == 81.0  # the further seed's (the search's run, 80.0, apart)
    assert client.get_run(seed_run).data.tags[CONFIRMS_TAG] == "t1"
    for run_id in (scheduled, parent):
        tables = {f.path for f in client.list_artifacts(run_id, "confirmation")}
        assert tables == {"confirmation/summary.csv", "confirmation/seeds.csv", "confirmation/intervals.png",
                          "confirmation/intervals.csv"}
    assert client.get_run(parent).data.metrics["confirmed_stsb_dev_mean"] == 81.0
