"""A replayed journal acts only on the runs of the sweep it is replayed for (its experiment; its parent run and the
hierarchy under it): a journal copied through a shared storage may have been planted there by someone who can write
the bucket but not MLflow, naming another team's runs. Real sqlite MLflow stores, real journals in a driver folder
(as ``sentsweep sync`` pulls them)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from mlflow.entities import Run

from sentsweep.tracking.journal import DRIVER_JOURNALS, Entry, Journal, JournalState
from sentsweep.tracking.replay import Replayer
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, PARENT_TAG, ROLE_TAG, SWEEP_DIR_TAG, TRIAL_ID_TAG

#: What the planted entries would do to a run: overwrite a tag, log a metric, end it, mark it running again.
PLANTED: list[Entry] = [
    {"op": "tags", "tags": {"team": "hacked"}},
    {"op": "metrics", "points": [["accuracy", 0.0, 1000, 99]]},
    {"op": "json_artifact", "data": {"x": 1}, "file": "planted.json"},
    {"op": "finish", "status": "KILLED", "reason": "planted"},
    {"op": "running", "reason": "planted"},
]


@pytest.fixture
def sweep(tracking_uri: str) -> tuple[MlflowClient, str, str]:
    """The sweep's experiment and parent run."""
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("ours")
    parent = client.create_run(experiment, tags={ROLE_TAG: "sweep"}).info.run_id
    return client, experiment, parent


def _victim(client: MlflowClient, experiment: str, **tags: str) -> str:
    """A RUNNING run of someone else's, with a tag, a metric and no artifact."""
    run_id = client.create_run(experiment, tags={"team": "b", **tags}).info.run_id
    client.log_metric(run_id, "accuracy", 0.9, timestamp=1, step=1)
    return run_id


def _snapshot(client: MlflowClient, run_id: str) -> tuple[Any, ...]:
    """What a replay must not change about a run."""
    run = client.get_run(run_id)
    history = [(m.value, m.step) for m in client.get_metric_history(run_id, "accuracy")]
    return (run.info.status, run.info.end_time, run.data.tags, history,
            [f.path for f in client.list_artifacts(run_id)])


def _planted(tmp_path: Path, run_id: str | None, *entries: Entry, name: str = "trial-x.jsonl") -> Journal:
    """A journal as pulled from the storage into a driver folder: its state names ``run_id``."""
    journal = Journal(tmp_path / "sweep" / DRIVER_JOURNALS / name)
    for entry in entries:
        journal.append(entry)
    journal.save_state(JournalState(run_id=run_id))
    return journal


def _open(experiment: str, parent: str | None, trial_id: str, tags: dict[str, str] | None = None,
          **extra: Any) -> Entry:
    """An ``open`` entry of trial ``trial_id``'s run in ``experiment`` under ``parent`` (with ``tags``)."""
    return {"op": "open", "experiment_id": experiment, "parent_run_id": parent, "trial_id": trial_id,
            "run_name": trial_id, "tags": {TRIAL_ID_TAG: trial_id, ROLE_TAG: "trial", **(tags or {})}, **extra}


def _trial(client: MlflowClient, experiment: str, trial_id: str) -> Run:
    (run,) = client.search_runs([experiment], f"tags.`{TRIAL_ID_TAG}` = '{trial_id}'")
    return run


def test_a_journal_naming_a_run_of_another_experiment_leaves_it_alone_and_the_rest_is_delivered(
        sweep, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    client, experiment, parent = sweep
    theirs = client.create_experiment("another team's")
    victim = _victim(client, theirs)
    before = _snapshot(client, victim)
    journal = _planted(tmp_path, victim, *PLANTED,
                       _open(theirs, victim, "t9", create=True), *PLANTED)  # a run created or found over there
    ours = _planted(tmp_path, None, _open(experiment, parent, "t1", tags={PARENT_TAG: victim}),
                    {"op": "tags", "tags": {"ok": "1"}}, name="trial-t1.jsonl")
    replayer = Replayer(client, SweepScope(experiment, parent))

    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        state = replayer.flush(journal)
        assert replayer.flush(journal).delivered == state.delivered  # parked: refused again, warned once
        trial_state = replayer.flush(ours)

    assert _snapshot(client, victim) == before
    assert client.search_runs([theirs]) and len(client.search_runs([theirs])) == 1  # nothing created there
    assert state.skipped == len(PLANTED)  # refused for good at once, not retried
    # A refused open is never passed: the entries after it (its run's) are not counted delivered; the journal waits.
    assert state.parked and state.delivered == len(PLANTED) and journal.pending() == 1 + len(PLANTED)
    trial = _trial(client, experiment, "t1")  # another journal is delivered, under the sweep's parent whatever its
    assert trial.data.tags[PARENT_TAG] == parent and trial.data.tags["ok"] == "1"  # tags said
    assert trial_state.run_id == trial.info.run_id and ours.pending() == 0
    refusals = [r.getMessage() for r in caplog.records if "not a run of this sweep" in r.getMessage()]
    assert len(refusals) == len(PLANTED) + 1  # one line per entry, naming the journal and the entry's kind
    assert all(str(journal.path) in line for line in refusals)
    assert [line.split("(", 1)[1].split(")", 1)[0] for line in refusals] == [e["op"] for e in PLANTED] + ["open"]
    assert "the run of trial t9" in refusals[-1] and "parked" in refusals[-1]


def test_a_run_of_the_sweeps_experiment_outside_its_hierarchy_is_refused(sweep, tmp_path: Path) -> None:
    """Another sweep's parent and trial run in the same experiment, a run under one of this sweep's trials (no stage
    has children but the confirmation run): none is the sweep's."""
    client, experiment, parent = sweep
    other_parent = _victim(client, experiment, **{ROLE_TAG: "sweep"})
    other_trial = _victim(client, experiment, **{PARENT_TAG: other_parent, ROLE_TAG: "trial"})
    ours = client.create_run(experiment, tags={PARENT_TAG: parent, ROLE_TAG: "trial"}).info.run_id
    under_a_trial = _victim(client, experiment, **{PARENT_TAG: ours, ROLE_TAG: CONFIRMATION_ROLE})
    victims = [other_parent, other_trial, under_a_trial]
    before = [_snapshot(client, run_id) for run_id in victims]
    replayer = Replayer(client, SweepScope(experiment, parent))

    for index, run_id in enumerate(victims):
        journal = _planted(tmp_path, run_id, *PLANTED, name=f"trial-{index}.jsonl")
        assert replayer.flush(journal).skipped == len(PLANTED) and journal.pending() == 0
    for index, under in enumerate([other_parent, ours, None]):  # an open under a parent that is not the sweep's
        journal = _planted(tmp_path, None, _open(experiment, under, f"x{index}"), name=f"open-{index}.jsonl")
        assert replayer.flush(journal).parked and journal.pending() == 1

    assert [_snapshot(client, run_id) for run_id in victims] == before
    assert not client.search_runs([experiment], "tags.`sentsweep.trial_id` LIKE 'x%'")


class CountingClient(MlflowClient):
    """A real client that counts its ``get_run`` calls per run id."""

    def __init__(self, tracking_uri: str) -> None:
        super().__init__(tracking_uri=tracking_uri)
        self.get_runs: Counter[str] = Counter()

    def get_run(self, run_id: str) -> Run:
        self.get_runs[run_id] += 1
        return super().get_run(run_id)


def test_the_sweeps_hierarchy_is_delivered_each_run_looked_up_once(sweep, tmp_path: Path) -> None:
    """The parent, its trials, its confirmation run and the confirmation trials (created under it, or found there by
    a stage's own replayer); each run id costs one lookup however many entries name it."""
    client, experiment, parent = sweep
    counting = CountingClient(client.tracking_uri)
    replayer = Replayer(counting, SweepScope(experiment, parent))
    confirmation = client.create_run(experiment, tags={PARENT_TAG: parent, ROLE_TAG: CONFIRMATION_ROLE}).info.run_id
    metrics = [{"op": "metrics", "points": [["loss", 1.0 / step, 1000 + step, step]]} for step in range(1, 21)]
    journals = [_planted(tmp_path, parent, *metrics, {"op": "tags", "tags": {"done": "1"}}, name="parent.jsonl"),
                _planted(tmp_path, confirmation, *metrics, name="confirmation.jsonl"),
                _planted(tmp_path, None, _open(experiment, parent, "t1"), *metrics, name="trial-t1.jsonl"),
                _planted(tmp_path, None, _open(experiment, confirmation, "c1"), *metrics, name="trial-c1.jsonl")]
    for journal in journals:
        state = replayer.flush(journal)
        assert state.skipped == 0 and journal.pending() == 0, state.notes
    for run_id in (parent, confirmation, _trial(client, experiment, "t1").info.run_id,
                   _trial(client, experiment, "c1").info.run_id):
        assert [m.step for m in client.get_metric_history(run_id, "loss")] == list(range(1, 21))
    assert client.get_run(parent).data.tags["done"] == "1"
    assert _trial(client, experiment, "c1").data.tags[PARENT_TAG] == confirmation
    assert counting.get_runs == Counter({parent: 1, confirmation: 1})  # the trials' runs: found or created, not fetched

    stage = Replayer(client, SweepScope(experiment, confirmation))  # the stage's driver journals: its run is their root
    journal = _planted(tmp_path, None, _open(experiment, confirmation, "c1", create=False),
                       {"op": "tags", "tags": {"seen": "1"}}, name="stage-c1.jsonl")
    assert stage.flush(journal).skipped == 0
    assert _trial(client, experiment, "c1").data.tags["seen"] == "1"


def test_a_journal_registers_only_the_model_its_sweep_registers(sweep, tmp_path: Path) -> None:
    """A planted ``register`` entry could add a version, built from weights planted beside it, to another team's
    model under the syncing user's identity: only the parent run's own ``register_model`` param is registered."""
    client, experiment, parent = sweep
    client.log_param(parent, "register_model", "ours-model")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "w.txt").write_text("weights")
    client.log_artifacts(parent, str(tmp_path / "weights"), "best_model")
    journal = _planted(tmp_path, parent, {"op": "register", "name": "teamB-prod", "path": "best_model"},
                       name="driver.jsonl")
    state = Replayer(client, SweepScope(experiment, parent)).flush(journal)
    assert state.skipped == 1 and "registers 'ours-model', not 'teamB-prod'" in state.notes[0]
    assert not client.search_registered_models()
    assert SweepScope(experiment, parent).register_refusal(client, "ours-model") is None
    assert SweepScope(experiment, None).register_refusal(client, "ours-model") is not None  # no sweep run


def test_a_registration_replayed_again_reports_the_version_that_landed(sweep, tmp_path: Path) -> None:
    """A finalize run again after a crash past its registration journals the same ``register``: no second version,
    and the one that landed is what the sweep reports (it reported none, and said "registered once MLflow answers")."""
    client, experiment, parent = sweep
    client.log_param(parent, "register_model", "ours-model")
    client.create_registered_model("ours-model")
    landed = client.create_model_version("ours-model", f"runs:/{parent}/best_model", run_id=parent)
    replayer = Replayer(client, SweepScope(experiment, parent))
    state = replayer.flush(_planted(tmp_path, parent, {"op": "register", "name": "ours-model", "path": "best_model"},
                                    name="driver.jsonl"))
    assert state.skipped == 0 and replayer.registered == {"ours-model": str(landed.version)}
    assert len(client.search_model_versions("name = 'ours-model'")) == 1


def test_a_journal_cannot_list_a_run_as_a_sweep_or_move_it(sweep, tmp_path: Path) -> None:
    """Review 14, L10: a planted ``open`` that creates a run with ``sentsweep.role=sweep`` (``compare`` would list it as
    a sweep), or a ``tags`` entry that sets the role, the parent or the sweep folder of one of the sweep's runs."""
    client, experiment, parent = sweep
    journal = _planted(tmp_path, None, _open(experiment, parent, "t7", tags={ROLE_TAG: "sweep",
                                                                              SWEEP_DIR_TAG: "s3://elsewhere"}),
                       {"op": "tags", "tags": {ROLE_TAG: "sweep", "ok": "1"}},
                       {"op": "tags", "tags": {PARENT_TAG: "0" * 32}},
                       {"op": "tags", "tags": {"ok": "2"}})
    state = Replayer(client, SweepScope(experiment, parent)).flush(journal)
    trial = _trial(client, experiment, "t7")
    assert trial.data.tags[ROLE_TAG] == "trial" and SWEEP_DIR_TAG not in trial.data.tags
    assert trial.data.tags[PARENT_TAG] == parent and trial.data.tags["ok"] == "2"  # the refused entries: nothing
    assert state.skipped == 2 and all("does not set" in note for note in state.notes)
