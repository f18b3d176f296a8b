"""The sweep folder's lock (:mod:`sentsweep.platform.folder.lock`): one holder at a time, named when another is
refused; heartbeats keep it live, a stale one or a gone local holder frees it, a renewal that finds another token
loses it, a storage outage gives it up before it can expire. Logic against an in-process store and an injected
clock; then the real stores: a local folder (threads racing for it) and S3 (moto, conditional writes)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO

import pytest

from sentsweep.data.cache import atomic_write
from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform.driver.callbacks import StopWatch
from sentsweep.platform.driver.interrupt import StopSignals, graceful_stops
from sentsweep.platform.driver.resume import RESUMABLE, is_resumable
from sentsweep.platform.folder import lock_stores
from sentsweep.platform.folder.lock import (
    EXPIRY_FACTOR,
    GIVE_UP_FACTOR,
    LockHeldError,
    LockLost,
    LockRecord,
    SweepLock,
    boot_id,
    pid_namespace,
)
from sentsweep.platform.folder.lock_stores import LOCK_FILE, LocalLockStore, S3LockStore, Stored, lock_store
from sentsweep.platform.location import locate
from sentsweep.tracking.vocabulary import RUN_STATUS

INTERVAL = 30.0


class Clock:
    """Epoch seconds that move only when a test moves them."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class MemoryStore:
    """A lock store in memory with the real stores' compare-and-set; ``failures`` calls raise a storage error, and
    ``lose_answers`` writes are applied but answered with one (a lost S3 response)."""

    uri = "memory://sweep/driver.lock"

    def __init__(self) -> None:
        self.data: bytes | None = None
        self.version = 0
        self.failures = 0
        self.lose_answers = 0
        self.replaced = threading.Event()
        self.replaces = 0

    def _fail(self) -> None:
        if self.failures:
            self.failures -= 1
            raise StorageError("the storage did not answer", file=self.uri)

    def _write(self, data: bytes) -> str:
        self.data, self.version = data, self.version + 1
        if self.lose_answers:
            self.lose_answers -= 1
            raise StorageError("timed out waiting for the answer", file=self.uri)
        return str(self.version)

    def read(self) -> Stored | None:
        self._fail()
        return None if self.data is None else Stored(self.data, str(self.version))

    def write(self, data: bytes, version: str | None) -> str | None:
        self._fail()
        if (None if self.data is None else str(self.version)) != version:
            return None
        if version is not None:
            self.replaces += 1
        if self.replaces >= 3:
            self.replaced.set()
        return self._write(data)

    def record(self) -> LockRecord | None:
        return LockRecord.parse(self.data)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


def lock(store: MemoryStore, clock: Clock, **kwargs) -> SweepLock:
    return SweepLock(store, sweep_name="toy-1a2b", interval_s=INTERVAL, clock=clock, **kwargs)


def test_a_free_lock_is_taken_and_a_live_one_refuses_another_driver_by_name(store, clock) -> None:
    first = lock(store, clock)
    first.take()
    held = store.record()
    assert held is not None and held.token == first.token and held.pid == os.getpid()
    assert held.pid_ns == pid_namespace() and held.host == socket.gethostname()
    assert (held.heartbeat, held.expires) == (clock.now, clock.now + EXPIRY_FACTOR * INTERVAL)
    clock.now += 80
    with pytest.raises(LockHeldError, match=rf"being run by .*@.* \(pid {os.getpid()}\), heartbeat 80s ago; .*"
                                            rf"in 10s without a heartbeat; {store.uri}"):
        lock(store, clock).take()
    assert store.record() == held, "the refused driver wrote nothing"


def test_heartbeats_keep_the_lock_live(store, clock) -> None:
    holder = lock(store, clock)
    holder.take()
    for _ in range(5):
        clock.now += INTERVAL
        assert holder.beat() == INTERVAL
        assert store.record().heartbeat == clock.now
    with pytest.raises(LockHeldError, match="heartbeat 0s ago"):
        lock(store, clock).take()
    assert holder.lost is None


def test_an_expired_lock_is_taken_over_and_its_old_holder_stops_at_its_next_beat(store, clock) -> None:
    """Driver A is paused past the expiry; B takes the sweep over; A's next heartbeat finds B's token: it writes
    nothing, stops, and tells its sweep why (the driver's stop signals: LockLost at Tune's next step)."""
    stops = StopSignals()
    a = lock(store, clock, on_lost=stops.supersede)
    a.take()
    clock.now += EXPIRY_FACTOR * INTERVAL + 1
    b = lock(store, clock)
    b.take()
    taken = store.record()
    assert taken.token == b.token
    a.beat()
    assert a.lost is not None and stops.superseded == a.lost
    assert a.lost.startswith(f"another driver ({taken.holder()}) took over sweep toy-1a2b's lock by ")
    assert a.lost.endswith("; this one stops") and b.token not in a.lost
    a.beat()
    a.release()
    assert store.record() == taken, "A never rewrites nor releases B's lock"
    with graceful_stops(stops), pytest.raises(LockLost, match="took over sweep toy-1a2b's lock"):
        StopWatch().on_step_end(iteration=1, trials=[])


def test_a_lock_of_a_gone_process_is_free_at_once_only_in_this_pid_namespace(store, clock) -> None:
    """Containers with host networking share the hostname, not the process ids: a pid this process cannot see is
    no proof that the holder is gone unless the record names this PID namespace."""
    if pid_namespace() is None:
        pytest.skip("no /proc/self/ns/pid here")
    gone = subprocess.Popen(["true"])
    gone.wait()
    record = LockRecord("bob", socket.gethostname(), gone.pid, "pid:[4026500001]", "old", clock.now,
                        clock.now + 90)
    store.data = record.to_bytes()
    with pytest.raises(LockHeldError, match=rf"bob@{socket.gethostname()} \(pid {gone.pid}\)"):
        lock(store, clock).take()  # another container's live driver
    store.data = replace(record, pid_ns=pid_namespace()).to_bytes()
    successor = lock(store, clock)
    successor.take()
    assert store.record().token == successor.token


def test_a_lock_of_another_machine_with_this_hostname_and_pid_namespace_id_is_not_local(store, clock) -> None:
    """Two machines may share a hostname, and every host's own PID namespace has the same id: the boot id tells
    them apart, so a pid that is gone here says nothing of the other machine's live driver."""
    if pid_namespace() is None or boot_id() is None:
        pytest.skip("no /proc/self/ns/pid or boot id here")
    gone = subprocess.Popen(["true"])
    gone.wait()
    record = LockRecord("bob", socket.gethostname(), gone.pid, pid_namespace(), "old", clock.now, clock.now + 90,
                        boot="00000000-0000-0000-0000-000000000000")
    store.data = record.to_bytes()
    assert LockRecord.parse(store.data) == record
    with pytest.raises(LockHeldError, match=rf"bob@{socket.gethostname()} \(pid {gone.pid}\)"):
        lock(store, clock).take()
    store.data = replace(record, boot=boot_id()).to_bytes()  # this machine's boot: the holder is gone
    successor = lock(store, clock)
    successor.take()
    assert store.record().token == successor.token and store.record().boot == boot_id()


def test_an_unreadable_lock_holds_nothing_and_unknown_fields_are_ignored(store, clock) -> None:
    record = LockRecord("bob", "node-7", 4242, None, "b", clock.now, clock.now + 90)
    newer = {**json.loads(record.to_bytes()), "from_a_newer_version": 1}
    assert LockRecord.parse(json.dumps(newer).encode()) == record
    store.data = b"{not json"
    holder = lock(store, clock)
    holder.take()
    assert store.record().token == holder.token


def test_a_renewal_the_storage_fails_is_tried_again_then_given_up_before_the_lock_can_expire(
        store, clock, caplog) -> None:
    told: list[str] = []
    holder = lock(store, clock, on_lost=told.append)
    holder.take()
    renewed = clock.now
    store.failures = 10**6
    with caplog.at_level(logging.WARNING, logger="sentsweep.platform.folder.lock"):
        delays = []
        clock.now += INTERVAL
        while holder.lost is None:
            delays.append(holder.beat())
            clock.now += delays[-1]
    assert caplog.text.count("could not be renewed (") == 1, "one warning per outage"
    assert set(delays[:-1]) == {INTERVAL / 6}, "tried again soon"
    given_up = clock.now - delays[-1]
    assert GIVE_UP_FACTOR * INTERVAL <= given_up - renewed < EXPIRY_FACTOR * INTERVAL
    assert told == [holder.lost] and holder.lost.startswith("the lock of sweep toy-1a2b could not be renewed for 60s")
    assert store.record().token == holder.token and store.record().heartbeat == renewed


@pytest.mark.parametrize("fast_until", [0.0, 59.0], ids=["every-try-times-out", "the-last-try-times-out"])
def test_renewals_that_time_out_give_the_lock_up_before_it_can_expire(store, clock, fast_until) -> None:
    """A renewal that waits out the storage's timeouts (a blackholed S3 endpoint, about one interval) fails late:
    the time it failed counts, and no try begins after the give-up point, so the holder has stopped by the time
    another driver may take the lock over. The last renewal took 4 s, so the tries fall off the 5 s grid."""
    holder = lock(store, clock)
    holder.take()
    renewed = clock.now

    def fails(data: bytes, version: str | None) -> str | None:
        if clock.now - renewed >= fast_until:
            clock.now += INTERVAL
        raise StorageError("the storage did not answer (ReadTimeoutError)", file=store.uri)

    store.write = fails
    clock.now += 4 + INTERVAL
    while holder.lost is None:
        delay = holder.beat()
        assert clock.now - renewed <= EXPIRY_FACTOR * INTERVAL, "still holding when the lock could be taken over"
        clock.now += delay


def test_a_short_storage_outage_keeps_the_lock(store, clock) -> None:
    holder = lock(store, clock)
    holder.take()
    store.failures = 3
    clock.now += INTERVAL
    assert [holder.beat() for _ in range(3)] == [INTERVAL / 6] * 3
    assert holder.beat() == INTERVAL and holder.lost is None
    assert store.record().heartbeat == clock.now


def test_a_renewal_whose_answer_was_lost_is_the_holders_own(store, clock) -> None:
    holder = lock(store, clock)
    holder.take()
    store.lose_answers = 1
    clock.now += INTERVAL
    holder.beat()  # written, answered with an error: the version the holder knows is stale now
    clock.now += INTERVAL / 6
    holder.beat()  # the stale version is refused; the lock still holds its own token: adopted
    assert holder.lost is None
    clock.now += INTERVAL
    assert holder.beat() == INTERVAL and holder.lost is None and store.record().heartbeat == clock.now


def test_a_take_whose_create_was_applied_but_answered_as_a_failed_condition_holds_the_lock(store, clock) -> None:
    """S3 applied the create, its answer was lost, and the client's retry of the same request was refused (412):
    the lock holds this driver's token, so the driver holds it, not a lock it refuses as another's."""
    holder = lock(store, clock)
    real_write = store.write

    def applied_then_refused(data: bytes, version: str | None) -> str | None:
        real_write(data, version)
        return real_write(data, version)  # the retry: the object exists now

    store.write = applied_then_refused
    holder.take()
    store.write = real_write
    assert store.record().token == holder.token
    clock.now += INTERVAL
    assert holder.beat() == INTERVAL and holder.lost is None and store.record().heartbeat == clock.now


def test_a_released_lock_is_free_at_once_and_a_lost_one_is_not_released(store, clock) -> None:
    first = lock(store, clock)
    first.take()
    first.release()
    assert store.record().released and store.record().token == first.token
    second = lock(store, clock)
    second.take()
    assert store.record().token == second.token and not store.record().released


def test_two_drivers_writing_at_once_one_wins(store, clock) -> None:
    """B reads the free lock, A takes it before B writes: B's create fails, B reads again and is refused."""
    a, b = lock(store, clock), lock(store, clock)
    real_read = store.read

    def read_then_a_takes() -> Stored | None:
        store.read = real_read
        found = real_read()
        a.take()
        return found

    store.read = read_then_a_takes
    with pytest.raises(LockHeldError):
        b.take()
    assert store.record().token == a.token


def test_the_heartbeat_thread_renews_until_release(store) -> None:
    holder = SweepLock(store, sweep_name="toy-1a2b", interval_s=0.01)
    holder.acquire()
    assert store.replaced.wait(10), "the heartbeat thread renewed the lock"
    holder.release()
    assert not holder._thread.is_alive() and store.record().released


def test_which_parent_runs_a_resume_continues() -> None:
    assert {"interrupted", "crashed"} == RESUMABLE and RUN_STATUS["interrupted"] == "KILLED"
    assert is_resumable("RUNNING", {})  # a killed driver; its lock decides whether now
    assert is_resumable("KILLED", {"sentsweep.status": "interrupted"}) and is_resumable("KILLED", {})
    assert is_resumable("FAILED", {"sentsweep.status": "crashed"})
    assert not is_resumable("FAILED", {"sentsweep.status": "failed"}) and not is_resumable("FAILED", {})
    assert not is_resumable("FINISHED", {"sentsweep.status": "finished"})


def test_a_folder_on_another_storage_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match=r"field 'storage_path': 'gs://' sweep folders are not supported"):
        lock_store(locate("gs://bucket/ray_results/toy-1"))


def test_a_local_folder_lets_one_of_many_racing_drivers_take_it(tmp_path, monkeypatch) -> None:
    """Real files: eight drivers take a fresh folder's lock at once (threads, one guard each); one wins, the others
    are refused naming it; a stale version is never written over; a release frees the folder for the next, which
    replaces the lock under the guard that keeps other processes out."""
    location = locate(str(tmp_path / "sweep-1"))
    store = lock_store(location)
    assert isinstance(store, LocalLockStore) and store.path == tmp_path / "sweep-1" / LOCK_FILE
    contenders = [SweepLock.for_folder(location, "sweep-1") for _ in range(8)]
    start = threading.Barrier(len(contenders))
    outcomes: dict[str, str] = {}

    def take(contender: SweepLock) -> None:
        start.wait()
        try:
            contender.take()
            outcomes[contender.token] = "took"
        except LockHeldError as exc:
            outcomes[contender.token] = str(exc)

    threads = [threading.Thread(target=take, args=(c,)) for c in contenders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (winner,) = [c for c in contenders if outcomes[c.token] == "took"]
    assert all("being run by" in line for line in outcomes.values() if line != "took")
    stored = store.read()
    assert LockRecord.parse(stored.data).token == winner.token
    assert winner.beat() == winner.interval_s
    assert store.write(b"{}", stored.version) is None, "a stale version is not written over"
    winner.release()
    assert not list(tmp_path.glob("sweep-1/.driver.lock.*.tmp")), "no temporary file left"

    # between its read and its rename, a replace holds the guard against every other open of it (other processes)
    guard = store.path.with_name(f"{LOCK_FILE}.guard")
    blocked: list[bool] = []

    @contextlib.contextmanager
    def probing_write(path: Path) -> Iterator[IO[bytes]]:
        with guard.open("rb") as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                blocked.append(False)
            except BlockingIOError:
                blocked.append(True)
        with atomic_write(path) as out:
            yield out

    monkeypatch.setattr(lock_stores, "atomic_write", probing_write)
    successor = SweepLock.for_folder(location, "sweep-1")
    successor.take()
    assert blocked == [True] and LockRecord.parse(store.read().data).token == successor.token


def test_an_s3_folder_is_locked_by_conditional_writes(s3_endpoint, monkeypatch) -> None:
    """moto's S3 server: the lock is one object next to the sweep's files; a create when it exists and a replace of
    a version that changed are refused by S3 itself (If-None-Match, If-Match)."""
    from tests.platform.conftest import BUCKET
    from tools.harness.s3_server import DUMMY_KEYS

    for key, value in DUMMY_KEYS.items():
        monkeypatch.setenv(key, value)
    name = f"toy-{uuid.uuid4().hex[:8]}"
    location = locate(f"s3://{BUCKET}/ray_results/{name}", s3_endpoint)
    store = lock_store(location)
    assert isinstance(store, S3LockStore) and store.uri == f"s3://{BUCKET}/ray_results/{name}/{LOCK_FILE}"
    first = SweepLock.for_folder(location, name)
    first.take()
    with pytest.raises(LockHeldError, match=rf"being run by .*; s3://{BUCKET}/ray_results/{name}/driver.lock\)"):
        SweepLock.for_folder(location, name).take()
    stored = store.read()
    assert store.write(b"{}", None) is None, "If-None-Match: * refused"
    assert first.beat() == first.interval_s
    assert store.write(b"{}", stored.version) is None, "If-Match of a stale ETag refused"
    assert LockRecord.parse(store.read().data).token == first.token
    first.release()
    second = SweepLock.for_folder(location, name)
    second.take()
    assert LockRecord.parse(store.read().data).token == second.token


def test_a_sweep_that_fails_before_its_first_trial_gives_its_lock_back(tmp_path, tiny_bert_dir, tracking_uri,
                                                                       private_cache, monkeypatch) -> None:
    """The manifest cannot be written (a storage outage): the sweep ends crashed, and its lock is released at once,
    not kept alive by its heartbeat for as long as the process (a notebook, a test run) lives."""
    from sentsweep.platform.driver.sweep import run_sweep
    from sentsweep.platform.location import SweepLocation
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    def outage(self: SweepLocation, *args: object) -> None:
        raise StorageError("the storage did not answer", file=self.uri)

    monkeypatch.setattr(SweepLocation, "write_manifest", outage)
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri)
    before = set(threading.enumerate())
    with pytest.raises(StorageError):
        run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=lambda line: None)
    (lock_file,) = (tmp_path / "ray_results").glob(f"*/{LOCK_FILE}")
    record = LockRecord.parse(lock_file.read_bytes())
    assert record is not None and record.released
    assert not [t for t in set(threading.enumerate()) - before if t.name == "sentsweep-lock"]
