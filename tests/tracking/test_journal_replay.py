"""The tracking journal: a trial logs through an outage without failing, and replays deliver every call once.

The outage is a tracking URI nothing listens on (the real MLflow client, no retries); the journal it leaves is
then replayed into a real sqlite store, as the driver would once the server answers again."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.tracking import TrackingSettings
from sentsweep.tracking.journal import Journal, JournalState
from sentsweep.tracking.replay import REFUSAL_SPAN_S, Reachability, Replayer
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.trial_logger import MlflowTrialLogger
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, REASON_TAG, TRIAL_ID_TAG
from tools.harness.processes import free_port


@pytest.fixture
def store(tracking_uri):
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    parent = client.create_run(experiment).info.run_id
    return client, TrackingSettings(tracking_uri=tracking_uri, experiment_id=experiment, parent_run_id=parent,
                                    sweep_name="s", trial_id="t1")


@pytest.fixture
def no_retries(monkeypatch):
    """MLflow's client gives up at once (its default retry budget is ~4 minutes)."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    yield
    Reachability._by_uri.clear()


def _replayer(client: MlflowClient, settings: TrackingSettings) -> Replayer:
    """A replayer for the sweep of ``settings`` (its experiment and parent run)."""
    return Replayer(client, SweepScope(settings.experiment_id, settings.parent_run_id))


def _trial_runs(client: MlflowClient, settings: TrackingSettings) -> list:
    return client.search_runs([settings.experiment_id], f"tags.`{TRIAL_ID_TAG}` = '{settings.trial_id}'")


def _points(client: MlflowClient, run_id: str, keys: list[str]) -> Counter:
    return Counter((k, m.step, m.timestamp, m.value) for k in keys for m in client.get_metric_history(run_id, k))


def _log_a_trial(logger: MlflowTrialLogger, out: Path) -> None:
    logger.start({"lr": 1e-3, "pooling": "mean"})
    for step in (2, 4, 6):
        logger.log_metrics({"train_loss": 1.0 / step, "stsb_dev": 60.0 + step}, step)
    out.mkdir(exist_ok=True)
    (out / "history.jsonl").write_text("{}\n")
    logger.log_artifacts(out)
    logger.finish("FINISHED", totals={"wall_seconds": 5.0})


def test_an_outage_is_journaled_then_replayed_once(store, tmp_path, no_retries):
    client, settings = store
    down = settings.model_copy(update={"tracking_uri": f"http://127.0.0.1:{free_port()}"})
    journal_path = tmp_path / "trial" / "tracking-journal.jsonl"
    logger = MlflowTrialLogger(down, journal_path=journal_path)
    _log_a_trial(logger, tmp_path / "out")  # no exception: the trial goes on
    assert logger.run_id is None and logger.pending() == 8
    lines = [json.loads(line) for line in journal_path.read_text().splitlines()]
    assert [e["op"] for e in lines] == ["open", "params", "metrics", "metrics", "metrics", "artifacts", "metrics",
                                        "finish"]

    journal = Journal(journal_path)
    state = _replayer(client, settings).flush(journal)  # the server answers again (here: the store it writes to)
    assert state.delivered == 8 and journal.pending() == 0
    [run] = _trial_runs(client, settings)
    assert run.info.status == "FINISHED" and run.info.run_id == state.run_id
    assert run.data.params == {"lr": "0.001", "pooling": "mean"} and run.data.metrics["wall_seconds"] == 5.0
    history = client.get_metric_history(run.info.run_id, "stsb_dev")
    assert [(m.step, m.value) for m in history] == [(2, 62.0), (4, 64.0), (6, 66.0)]
    assert [f.path for f in client.list_artifacts(run.info.run_id)] == ["history.jsonl"]
    before = _points(client, run.info.run_id, ["train_loss", "stsb_dev", "wall_seconds"])
    assert max(before.values()) == 1

    # Replays that start over (a lost state file, a stale copy, another process): nothing is added twice.
    journal.save_state(JournalState())
    _replayer(client, settings).flush(journal)
    journal.save_state(JournalState(delivered=3, run_id=run.info.run_id))
    _replayer(client, settings).flush(journal)
    assert len(_trial_runs(client, settings)) == 1
    assert _points(client, run.info.run_id, ["train_loss", "stsb_dev", "wall_seconds"]) == before
    assert client.get_run(run.info.run_id).info.status == "FINISHED"


def test_a_create_that_landed_but_timed_out_is_not_repeated(store, tmp_path):
    client, settings = store
    logger = MlflowTrialLogger(settings, journal_path=tmp_path / "j.jsonl")
    logger.start({"lr": 1e-3})
    logger.log_metrics({"stsb_dev": 70.0}, step=2)
    # As if the client had timed out after the server created the run: nothing counted as delivered.
    logger.journal.save_state(JournalState())
    logger.log_metrics({"stsb_dev": 71.0}, step=4)
    [run] = _trial_runs(client, settings)
    assert run.data.tags[ATTEMPT_TAG] == "1" and logger.reattached is False
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "stsb_dev")] == [(2, 70.0),
                                                                                                   (4, 71.0)]


def test_a_later_attempt_reattaches_and_a_stale_driver_status_is_void(store, tmp_path):
    client, settings = store
    first = MlflowTrialLogger(settings, journal_path=tmp_path / "j.jsonl")
    first.start({"lr": 1e-3})
    first.finish("FAILED", reason="RuntimeError: node lost")
    driver = Journal(tmp_path / "driver.jsonl")  # the driver's close of attempt 1, not delivered in time
    upto = len(first.journal.entries())
    driver.append({"op": "open", "experiment_id": settings.experiment_id, "trial_id": "t1",
                   "parent_run_id": settings.parent_run_id, "create": True})
    driver.append({"op": "finish", "status": "FAILED", "reason": "worker died",
                   "void_after": {"path": str(first.journal.path), "upto": upto}})
    second = MlflowTrialLogger(settings, journal_path=tmp_path / "j.jsonl")  # the retry, same trial folder
    second.start({"lr": 1e-3})
    assert second.reattached and second.run_id == first.run_id
    second.finish("FINISHED")
    _replayer(client, settings).flush(driver)  # delivered only now: must not undo attempt 2
    [run] = _trial_runs(client, settings)
    assert run.info.status == "FINISHED" and run.data.tags[ATTEMPT_TAG] == "2"
    assert REASON_TAG not in run.data.tags


def test_steps_trained_again_after_a_restore_are_logged_once(store, tmp_path):
    """SRE review 18, M2: attempt 1 logged steps 2-6 and died; attempt 2 restored the checkpoint of step 4 and trains
    steps 6 and 8: the curve keeps one point per step (step 6 as attempt 1 logged it: MLflow deletes no point), and
    the late delivery of attempt 1's set-aside copy adds nothing attempt 2 logged."""
    client, settings = store
    first = MlflowTrialLogger(settings, journal_path=tmp_path / "attempt-1.jsonl")
    first.start({"lr": 1e-3})
    for step in (2, 4, 6):
        first.log_metrics({"stsb_dev": 60.0 + step}, step)
    lost = Journal(tmp_path / "set-aside.jsonl")  # a copy of attempt 1 holding one more point, never delivered
    for entry in first.journal.entries():
        lost.append(entry)
    lost.save_state(first.journal.state())
    lost.append({"op": "metrics", "points": [["stsb_dev", 67.5, 1, 8]], "time_ms": 1})
    second = MlflowTrialLogger(settings, journal_path=tmp_path / "attempt-2.jsonl")
    second.start({"lr": 1e-3})
    assert second.reattached
    for step in (6, 8):
        second.log_metrics({"stsb_dev": 70.0 + step}, step)
    history = [(m.step, m.value) for m in client.get_metric_history(second.run_id, "stsb_dev")]
    assert sorted(history) == [(2, 62.0), (4, 64.0), (6, 66.0), (8, 78.0)]
    _replayer(client, settings).flush(lost, superseded=True)
    assert lost.pending() == 0
    assert sorted((m.step, m.value) for m in client.get_metric_history(second.run_id, "stsb_dev")) == sorted(history)


def test_system_samples_of_a_restored_attempt_are_kept(store, tmp_path):
    """SRE review 20, M2: a restored attempt samples the machine while it loads and trains steps again; those samples
    are measurements of this attempt, not steps trained twice: they are logged (they were dropped at every step the
    lost attempt had reached), while its re-trained dev points are not."""
    client, settings = store
    first = MlflowTrialLogger(settings, journal_path=tmp_path / "attempt-1.jsonl")
    first.start({"lr": 1e-3})
    for step in (2, 4, 6):
        first.log_metrics({"stsb_dev": 60.0 + step, "system/cpu_utilization_percentage": 50.0}, step)
    second = MlflowTrialLogger(settings, journal_path=tmp_path / "attempt-2.jsonl")
    second.start({"lr": 1e-3})
    assert second.reattached
    second.log_metrics({"stsb_dev": 76.0, "system/cpu_utilization_percentage": 90.0}, 6)
    second._log_system_metrics({"system/cpu_utilization_percentage": 95.0})  # at step 6, before the next report
    cpu = [(m.step, m.value) for m in client.get_metric_history(second.run_id, "system/cpu_utilization_percentage")]
    assert sorted(cpu) == [(2, 50.0), (4, 50.0), (6, 50.0), (6, 90.0), (6, 95.0)]
    assert [m.value for m in client.get_metric_history(second.run_id, "stsb_dev") if m.step == 6] == [66.0]


def test_the_journal_parses_only_what_was_appended(tmp_path, monkeypatch):
    """SRE review 20, H1: every append (a report, a system-metrics sample every 10 s) parsed the whole journal two or
    three times: after a day, 2.6 s per sample, holding the GIL and the logger's lock. Now each read parses the lines
    appended since the last; a file rewritten or replaced is read again whole."""
    import sentsweep.tracking.journal as journal_module

    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps({"op": "metrics", "points": [["loss", 1.0, i, i]]}) + "\n"
                            for i in range(5000)))
    journal = Journal(path)
    assert len(journal.entries()) == 5000
    parsed = Counter()
    loads = journal_module.json.loads

    def counting(text, *args, **kwargs):
        parsed["lines"] += 1
        return loads(text, *args, **kwargs)

    monkeypatch.setattr(journal_module.json, "loads", counting)
    journal.append({"op": "metrics", "points": [["loss", 2.0, 5000, 5000]]})
    assert journal.pending() == 5001 and journal.entries(5000)[0]["points"][0][1] == 2.0
    assert parsed["lines"] <= 2, parsed  # the appended line, and it again as the one entry asked for
    parsed.clear()
    assert len(journal.entries(4990)) == 11 and parsed["lines"] == 11  # a flush parses its pending entries only
    with path.open("ab") as handle:
        handle.write(b'{"op": "metr')  # a writer mid-line: not an entry yet
    assert journal.count() == 5001
    with path.open("ab") as handle:
        handle.write(b'ics", "points": []}\n')
    assert journal.count() == 5002 and journal.entries(5001) == [{"op": "metrics", "points": []}]
    assert len(journal.entries()) == 5002 and journal.entries()[17]["points"][0][1] == 1.0


def test_a_journal_rewritten_replaced_or_cut_is_read_again(tmp_path):
    """Each way a journal's file can change under a reader that keeps its line offsets: read again whole."""
    path = tmp_path / "j.jsonl"
    lines = [json.dumps({"op": "metrics", "points": [["loss", float(i), i, i]]}) + "\n" for i in range(20)]
    path.write_text("".join(lines))
    journal = Journal(path)
    assert journal.count() == 20
    same_size = lines[-1].replace('"loss"', '"LOSS"')  # the last line changed in place, the size kept
    path.write_text("".join(lines[:-1]) + same_size)
    assert journal.entries(19)[0]["points"][0][0] == "LOSS"
    path.write_text("".join(lines[:5]))  # shorter (a torn tail cut, a crash's lost appends)
    assert journal.count() == 5 and journal.entries(4)[0]["points"][0][1] == 4.0
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(lines[10:] + lines[:10]))  # longer, another file: a pulled copy
    copy.replace(path)
    assert journal.count() == 20 and journal.entries(0)[0]["points"][0][1] == 10.0
    path.unlink()
    assert journal.count() == 0 and journal.entries() == []


def test_the_journal_is_read_by_two_threads_at_once(tmp_path):
    """The trial's thread and its system-metrics sampler read one journal object: its offsets are theirs alike (two
    unlocked readers doubled the count)."""
    import threading

    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps({"op": "tags", "tags": {"i": i}}) + "\n" for i in range(20000)))
    journal, counts = Journal(path), []
    readers = [threading.Thread(target=lambda: counts.append(journal.count())) for _ in range(4)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert counts == [20000] * 4 and journal.count() == 20000


def test_a_refused_entry_is_set_aside_once_refused_over_time(store, tmp_path):
    client, settings = store
    logger = MlflowTrialLogger(settings, journal_path=tmp_path / "j.jsonl")
    now = [1_700_000_000.0]
    logger.outbox.replayer.clock = lambda: now[0]
    logger.start({"lr": 1e-3})
    client.delete_run(logger.run_id)  # e.g. a user deleted the run: logging to it is refused for good
    logger.log_metrics({"stsb_dev": 70.0}, step=2)
    logger.log_metrics({"stsb_dev": 71.0}, step=4)  # the first entry refused again: both wait
    assert logger.pending() == 2 and logger.journal.state().skipped == 0
    now[0] += REFUSAL_SPAN_S
    assert logger.outbox.flush()  # a third refusal, 10 minutes after the first: set aside, and the next one alike
    state = logger.journal.state()
    assert logger.pending() == 0 and state.skipped == 2 and "metrics" in state.notes[0]


def _crash_keeps_lines(path: Path, kept: int) -> None:
    """What a host crash leaves of a journal whose last appends were not on disk yet: its first ``kept`` lines."""
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:kept]))


def test_an_offset_past_the_lines_a_crash_left_does_not_swallow_the_next_entries(tmp_path, caplog):
    path = tmp_path / "j.jsonl"
    before = Journal(path)
    for step in range(5):
        before.append({"op": "metrics", "points": [["loss", 1.0, 1000 + step, step]]})
    before.save_state(JournalState(delivered=5, run_id="r1"))
    _crash_keeps_lines(path, 3)
    after = Journal(path)  # the process that resumes the trial
    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        after.append({"op": "metrics", "points": [["loss", 0.5, 2000, 5]]})
        after.append({"op": "metrics", "points": [["loss", 0.4, 2001, 6]]})
    assert after.pending() == 2
    assert [entry["points"][0][3] for entry in after.undelivered()] == [5, 6]
    assert after.state().delivered == 3 and after.state().run_id == "r1"
    assert "5 entries as delivered but only 3" in caplog.text


def test_a_replay_counts_no_more_delivered_than_the_entries_on_disk(store, tmp_path, caplog):
    client, settings = store
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append({"op": "open", "experiment_id": settings.experiment_id, "trial_id": "t1",
                    "parent_run_id": settings.parent_run_id, "create": True})
    for step in (1, 2, 3, 4):
        journal.append({"op": "metrics", "points": [["loss", 1.0 / step, 1000 + step, step]]})
    replayer = _replayer(client, settings)
    assert replayer.flush(journal).delivered == 5
    _crash_keeps_lines(path, 3)  # delivered, then lost from disk (the run has them)
    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        state = replayer.flush(Journal(path))
    assert state.delivered == 3 and Journal(path).state().delivered == 3 and "only 3" in caplog.text
    resumed = Journal(path)
    resumed.append({"op": "metrics", "points": [["loss", 0.1, 2000, 5]]})
    resumed.append({"op": "metrics", "points": [["loss", 0.05, 2001, 6]]})
    assert resumed.pending() == 2
    state = replayer.flush(resumed)
    assert state.delivered == 5 and resumed.pending() == 0
    assert [m.step for m in client.get_metric_history(state.run_id, "loss")] == [1, 2, 3, 4, 5, 6]


def test_a_line_a_killed_writer_left_half_written_does_not_hide_the_next_writers_entries(tmp_path, caplog):
    path = tmp_path / "tracking-journal.jsonl"
    first = Journal(path)
    first.append({"kind": "metrics", "points": [["loss", 1.0, 0, 1]]})
    first.append({"kind": "metrics", "points": [["loss", 0.9, 0, 2]]})
    with open(path, "a", encoding="utf-8") as handle:  # the killed writer's last write, cut short
        handle.write('{"kind": "metrics", "points": [["loss", 0.')
    assert len(Journal(path).entries()) == 2
    resumed = Journal(path)  # the resumed attempt appends to the same journal
    with caplog.at_level("WARNING", logger="sentsweep.tracking"):
        resumed.append({"kind": "metrics", "points": [["loss", 0.8, 0, 3]]})
        resumed.append({"kind": "finish", "status": "FINISHED"})
    steps = [e["points"][0][3] for e in Journal(path).entries() if e["kind"] == "metrics"]
    assert steps == [1, 2, 3]
    assert Journal(path).entries()[-1] == {"kind": "finish", "status": "FINISHED"}
    assert "half-written" in caplog.text
