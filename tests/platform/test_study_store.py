"""The sweep's study journal (sentsweep.platform.search.study_store): in a local folder Optuna's file backend, on
s3:// the
bucket through conditional writes (moto's S3 server, which refuses a PUT with ``If-None-Match: *`` on a taken key)."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import locate
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.s3 import s3_client
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.platform.search.study_store import JOURNAL_FILE, S3JournalBackend, StudyStore, load_study
from tests.platform.conftest import BUCKET
from tools.harness.processes import free_port
from tools.harness.s3_server import DUMMY_KEYS


def lr_space(trial):
    trial.suggest_float("lr", 1e-5, 1e-1, log=True)


def _config() -> SweepConfig:
    return SweepConfig(name="s", method="toy", seed=0, metric="score", startup_trials=2)


def _run(searcher, trials: int) -> None:
    for i in range(trials):
        lr = searcher.suggest(f"t{i}")["lr"]
        searcher.on_trial_result(f"t{i}", {"score": lr, "training_iteration": 1})
        searcher.on_trial_complete(f"t{i}", {"score": 2 * lr, FINAL_KEY: 1.0, "training_iteration": 2})


def test_a_local_journal_is_the_study_every_reader_sees(tmp_path):
    location = locate(str(tmp_path / "s-1"))
    (tmp_path / "s-1").mkdir()
    assert load_study(location) is None and not (tmp_path / "s-1" / JOURNAL_FILE).exists()  # a reader creates none
    searcher = build_searcher(_config(), lr_space, [{"lr": 1e-3}], store=StudyStore(location.uri), study_name="s-1")
    _run(searcher, 3)
    study = load_study(location)
    assert study.study_name == "s-1" and [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    assert study.trials[0].params == {"lr": 1e-3} and study.trials[0].intermediate_values == {1: 1e-3}
    assert [t.user_attrs["tune_trial_id"] for t in study.trials] == ["t0", "t1", "t2"]
    for line in (tmp_path / "s-1" / JOURNAL_FILE).read_text().splitlines():
        json.loads(line)  # JSON only: reading it runs nothing from the folder


def test_a_folder_on_another_scheme_is_refused_by_name():
    with pytest.raises(ConfigError, match="field 'storage_path': a sweep folder on gs:// cannot hold the Optuna study"):
        StudyStore("gs://bucket/s-1").storage()


@pytest.fixture
def s3_keys(monkeypatch, s3_endpoint) -> str:
    for key, value in DUMMY_KEYS.items():
        monkeypatch.setenv(key, value)
    return s3_endpoint


def test_a_journal_on_s3_holds_the_study_and_continues_after_a_restore(s3_keys):
    import pickle

    store = StudyStore(f"s3://{BUCKET}/ray_results/s-2", s3_keys)
    location = locate(store.uri, s3_keys)
    assert load_study(location) is None
    searcher = build_searcher(_config(), lr_space, [], store=store, study_name="s-2")
    pickled = pickle.dumps(searcher)  # what Tune keeps of it: where the study is
    _run(searcher, 3)
    searcher.suggest("t3")
    restored = pickle.loads(pickled)
    assert restored.running() == {"t3": 3}  # read from the journal: which Optuna trial each Tune trial is
    restored.on_trial_complete("t3", {"score": 1.0, FINAL_KEY: 1.0, "training_iteration": 2})
    restored.on_trial_complete("t0", {"score": 9.0, FINAL_KEY: 1.0, "training_iteration": 2})  # told before: once
    study = load_study(location)
    assert [t.value for t in study.trials][3] == 1.0 and len(study.trials) == 4
    assert study.trials[0].value != 9.0


def test_two_writers_on_one_number_both_land_in_order(s3_keys):
    """A writer whose next number another writer took in the meantime is refused by S3 (412), reads that batch and
    writes under the next number: no log lost, none written twice."""
    client = s3_client(s3_keys)
    first, second = (S3JournalBackend(BUCKET, "race/optuna_journal.log", s3_client(s3_keys)) for _ in range(2))
    first.append_logs([{"n": 0}])
    put = second.client.put_object
    raced = []

    def put_after_another(**kwargs):
        if not raced:
            raced.append(kwargs["Key"])
            first.append_logs([{"n": 1}])  # takes the number `second` is about to write
        return put(**kwargs)

    second.client.put_object = put_after_another
    second.append_logs([{"n": 2}, {"n": 3}])
    assert raced == ["race/optuna_journal.log/000000000001.jsonl"]
    assert S3JournalBackend(BUCKET, "race/optuna_journal.log", client).read_logs(0) == [
        {"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]
    assert first.read_logs(2) == [{"n": 2}, {"n": 3}]


def test_a_bucket_that_does_not_answer_is_a_storage_error_naming_the_journal(s3_keys):
    store = StudyStore(f"s3://{BUCKET}/ray_results/s-3", f"http://127.0.0.1:{free_port()}")
    with pytest.raises(StorageError, match=rf"^s3://{BUCKET}/ray_results/s-3/{JOURNAL_FILE}: the storage did not"):
        store.storage(create=False)


def test_optuna_itself_runs_on_the_s3_journal(s3_keys):
    """Optuna's own optimize loop on the backend: every trial recorded once, numbered in order."""
    storage = StudyStore(f"s3://{BUCKET}/ray_results/s-4", s3_keys).storage()
    study = optuna.create_study(storage=storage, study_name="s-4")
    study.optimize(lambda t: t.suggest_float("x", 0, 1) ** 2, n_trials=5)
    again = optuna.load_study(study_name="s-4", storage=StudyStore(f"s3://{BUCKET}/ray_results/s-4", s3_keys).storage())
    assert [t.number for t in again.trials] == list(range(5))
    assert [t.value for t in again.trials] == [t.value for t in study.trials]


def test_a_journal_whose_last_append_was_cut_short_continues_whole(tmp_path):
    """A full disk (or a crash) mid-append leaves half a line at the journal's end; the resumed searcher's first
    append must not run into it, which would lose that trial and make every later read of the journal fail."""
    location = locate(str(tmp_path / "s-1"))
    (tmp_path / "s-1").mkdir()
    searcher = build_searcher(_config(), lr_space, [{"lr": 1e-3}], store=StudyStore(location.uri), study_name="s-1")
    _run(searcher, 2)
    journal = tmp_path / "s-1" / JOURNAL_FILE
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"op_code":4,"worker_id":"w","study_id":0,"datetime_st')
    resumed = build_searcher(_config(), lr_space, [], store=StudyStore(location.uri), study_name="s-1")
    lr = resumed.suggest("t2")["lr"]
    resumed.on_trial_complete("t2", {"score": lr, FINAL_KEY: 1.0, "training_iteration": 1})
    study = load_study(location)
    assert [t.user_attrs["tune_trial_id"] for t in study.trials] == ["t0", "t1", "t2"]
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 3
    assert journal.read_bytes().startswith(whole)
    for line in journal.read_text().splitlines():
        json.loads(line)
