"""What a replay does when MLflow answers with a refusal (review 18, H1): an error naming the server's database is an
outage whatever its code (MLflow answers a pool timeout as ``BAD_REQUEST``), a refusal is given up only once it came
back over time (an injected clock, no sleeps), and a refused ``open`` parks its journal instead of letting the
entries after it count as delivered. Real sqlite MLflow stores, real journals."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient
from mlflow.exceptions import RestException

from sentsweep.tracking.journal import DRIVER_JOURNALS, TRIAL_JOURNAL, Entry, Journal, JournalState
from sentsweep.tracking.replay import REFUSAL_SPAN_S, Replayer
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.vocabulary import PARENT_TAG, TRIAL_ID_TAG

#: What MLflow's server answers when a worker's connection pool is exhausted (mlflow/store/db/utils.py maps the
#: sqlalchemy TimeoutError to BAD_REQUEST, HTTP 400).
POOL_TIMEOUT = {"error_code": "BAD_REQUEST", "message": "(sqlalchemy.exc.TimeoutError) QueuePool limit of size 3 "
                "overflow 2 reached, connection timed out, timeout 30.00"}
#: The client calls a replay of :func:`_trial_entries` makes into a fresh store (parent lookup, search, create, a
#: search for its twins; params: get_run, log_batch; metrics: log_batch; finish: get_run, set_terminated).
CLEAN_REPLAY_CALLS = 9


class FlakyClient:
    """A real client whose ``fail_at``-th call (0: the first) fails as the server under load does, once."""

    def __init__(self, tracking_uri: str, fail_at: int) -> None:
        self.real = MlflowClient(tracking_uri=tracking_uri)
        self.fail_at = fail_at
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.real, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls - 1 == self.fail_at:
                raise RestException(POOL_TIMEOUT)
            return attribute(*args, **kwargs)
        return call


@pytest.fixture
def sweep(tracking_uri: str) -> tuple[MlflowClient, str, str]:
    """The sweep's experiment and parent run."""
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("ours")
    return client, experiment, client.create_run(experiment).info.run_id


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def _trial_entries(experiment: str, parent: str) -> list[Entry]:
    """A trial's journal: its run opened, a param, a metric point, its end."""
    return [{"op": "open", "experiment_id": experiment, "parent_run_id": parent, "trial_id": "t1", "token": "x",
             "run_name": "t1", "tags": {TRIAL_ID_TAG: "t1"}},
            {"op": "params", "params": {"lr": "1e-05"}},
            {"op": "metrics", "points": [["stsb_dev", 80.0, 1000, 100]]},
            {"op": "finish", "status": "FINISHED", "reason": None, "if_running": True}]


def _journal(tmp_path: Path, *entries: Entry, state: JournalState | None = None) -> Journal:
    journal = Journal(tmp_path / "trial" / "tracking-journal.jsonl")
    for entry in entries:
        journal.append(entry)
    if state is not None:
        journal.save_state(state)
    return journal


def _trial_runs(client: MlflowClient, experiment: str) -> list[Any]:
    return client.search_runs([experiment], f"tags.`{TRIAL_ID_TAG}` = 't1'")


def _flushes(replayer: Callable[[], Replayer], journal: Journal, clock: Clock, times: list[float]) -> list[int]:
    """The entries pending after a flush at each of ``times`` (seconds after the first), by a new replayer each time
    (a new process: what it knows of earlier refusals is in the journal's state file)."""
    start, pending = clock.now, []
    for offset in times:
        clock.now = start + offset
        replayer().flush(journal)
        pending.append(journal.pending())
    return pending


@pytest.mark.parametrize("fail_at", range(CLEAN_REPLAY_CALLS))
def test_a_pool_timeout_answered_as_bad_request_is_an_outage_and_nothing_is_lost(
        sweep, tracking_uri: str, tmp_path: Path, fail_at: int) -> None:
    """The pool timeout hits one call of the replay (the first: the trial's ``open``; or any later one): the flush
    stops there like in an outage, and the next one delivers everything, once."""
    client, experiment, parent = sweep
    journal = _journal(tmp_path, *_trial_entries(experiment, parent))
    flaky = FlakyClient(tracking_uri, fail_at)
    replayer = Replayer(flaky, SweepScope(experiment, parent))  # type: ignore[arg-type]

    with pytest.raises(RestException, match="QueuePool"):
        replayer.flush(journal)
    assert journal.pending() > 0 and journal.state().skipped == 0
    state = replayer.flush(journal)

    assert state.delivered == 4 and journal.pending() == 0 and state.skipped == 0
    [run] = _trial_runs(client, experiment)
    assert run.info.run_id == state.run_id and run.info.status == "FINISHED"
    assert run.data.params == {"lr": "1e-05"}
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "stsb_dev")] == [(100, 80.0)]


def test_an_open_refused_for_good_parks_its_journal_until_it_is_accepted(
        sweep, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The trial's experiment was deleted (MLflow refuses to create a run in it, ``INVALID_PARAMETER_VALUE``): the
    entries after the ``open`` need its run, so none is counted delivered, even once the refusal is given up; one
    warning names the trial and the refusal. Restored, the journal is delivered whole."""
    client, experiment, parent = sweep
    journal = _journal(tmp_path, *_trial_entries(experiment, parent))
    client.delete_experiment(experiment)
    clock = Clock()

    def replayer() -> Replayer:
        return Replayer(client, SweepScope(experiment, parent), clock=clock)

    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        pending = _flushes(replayer, journal, clock, [0, 300, REFUSAL_SPAN_S, REFUSAL_SPAN_S + 1, 2 * REFUSAL_SPAN_S])

    assert pending == [4] * 5
    state = journal.state()
    assert state.delivered == 0 and state.skipped == 0 and state.parked and state.refusals == 5
    parked = [r.getMessage() for r in caplog.records if "parked" in r.getMessage()]
    assert len(parked) == 1 and "trial t1" in parked[0] and "INVALID_PARAMETER_VALUE" in parked[0]
    assert "3 later entries pending" in parked[0]
    assert not _trial_runs(client, experiment)

    client.restore_experiment(experiment)
    state = replayer().flush(journal)
    assert journal.pending() == 0 and state.skipped == 0 and not state.parked and state.refusal is None
    [run] = _trial_runs(client, experiment)
    assert run.info.status == "FINISHED" and run.data.params == {"lr": "1e-05"}


@pytest.mark.parametrize(("times", "given_up_at"), [
    ([0, 1, REFUSAL_SPAN_S - 1, REFUSAL_SPAN_S], 3),  # three attempts early on: not before the span has passed
    ([0, REFUSAL_SPAN_S + 100, REFUSAL_SPAN_S + 101], 2),  # the span passed on the second: not before a third
])
def test_a_refused_metrics_entry_is_given_up_only_once_refused_over_time(
        sweep, tmp_path: Path, times: list[float], given_up_at: int) -> None:
    """A user deleted the trial's run: MLflow refuses its points (``INVALID_PARAMETER_VALUE``) for good. The first
    entry waits, pending, until the same refusal came back on 3 attempts over 10 minutes; then it and the next entry
    refused alike are set aside."""
    client, experiment, parent = sweep
    run_id = client.create_run(experiment, tags={PARENT_TAG: parent}).info.run_id
    journal = _journal(tmp_path, {"op": "metrics", "points": [["loss", 0.5, 1000, 1]]},
                       {"op": "metrics", "points": [["loss", 0.4, 1001, 2]]}, state=JournalState(run_id=run_id))
    client.delete_run(run_id)
    clock = Clock()

    pending = _flushes(lambda: Replayer(client, SweepScope(experiment, parent), clock=clock), journal, clock, times)

    assert pending == [2] * given_up_at + [0] * (len(times) - given_up_at)
    state = journal.state()
    assert state.skipped == 2 and "entry 0 (metrics)" in state.notes[0] and "entry 1 (metrics)" in state.notes[1]


def test_a_follow_waits_for_the_entries_it_names(sweep, tmp_path: Path) -> None:
    """The driver's journal of a trial follows the worker's (its history goes first, then the driver closes the run):
    while the worker's journal waits on a refusal, so does the driver's."""
    client, experiment, parent = sweep
    trial_run = client.create_run(experiment, tags={PARENT_TAG: parent}).info.run_id
    worker = Journal(tmp_path / "sweep" / "trial_0" / TRIAL_JOURNAL, run_id=trial_run)
    worker.append({"op": "metrics", "points": [["loss", 0.5, 1000, 1]]})
    client.delete_run(trial_run)
    driver = Journal(tmp_path / "sweep" / DRIVER_JOURNALS / "trial-0.jsonl", run_id=parent)
    driver.append({"op": "follow", "path": str(worker.path), "upto": 1})
    driver.append({"op": "tags", "tags": {"closed": "1"}})
    clock = Clock()

    pending = _flushes(lambda: Replayer(client, SweepScope(experiment, parent), clock=clock), driver, clock,
                       [0, 1, REFUSAL_SPAN_S])

    assert pending == [2, 2, 0] and worker.pending() == 0 and worker.state().skipped == 1
    assert client.get_run(parent).data.tags["closed"] == "1"


def test_a_state_file_written_before_refusals_were_counted_reads_as_none_met(tmp_path: Path) -> None:
    journal = _journal(tmp_path, {"op": "tags", "tags": {"a": "1"}})
    journal.state_path.write_text(json.dumps({"delivered": 1, "run_id": "r1", "skipped": 0, "notes": []}))
    assert journal.state() == JournalState(delivered=1, run_id="r1")
    assert journal.state().refusal is None and journal.state().refusals == 0 and not journal.state().parked


def test_a_parked_journal_is_counted_apart_and_set_aside_on_request(sweep, tracking_uri: str, tmp_path: Path) -> None:
    """A trial's ``open`` naming a parent outside the sweep is refused for good: its journal parks, and ``sentsweep
    sync`` reports its entries apart from those that wait for an outage (they will never go); with
    ``--give-up-refused`` they are set aside, counted as skipped with a note, so nothing is pending any more (the
    pruning that waits for an empty journal can go ahead)."""
    from sentsweep.platform.tracking_journals import DriverJournals, Replayed

    client, experiment, parent = sweep
    stray = _journal(tmp_path, *_trial_entries(experiment, "not-the-sweeps-parent"))
    folder = tmp_path / DRIVER_JOURNALS
    folder.mkdir()
    journals = DriverJournals(tracking_uri, folder, SweepScope(experiment, parent))
    assert journals.replay([stray]) == Replayed(pending=4, parked=4)
    assert journals.replay([stray], give_up_parked=True) == Replayed(given_up=4)
    state = stray.state()
    assert stray.pending() == 0 and state.skipped == 4 and not state.parked
    assert "4 entries given up (sentsweep sync --give-up-refused) after the refusal replayer" in state.notes[-1]
    assert _trial_runs(client, experiment) == []
    assert journals.replay([stray], give_up_parked=True) == Replayed()
