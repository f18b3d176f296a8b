"""One driver per sweep: a JSON lock ``driver.lock`` in the sweep folder, changed only by compare-and-set, renewed by
a daemon thread, expired after :data:`EXPIRY_FACTOR` intervals without a heartbeat (machines' clocks must agree within
one) or at once when its local holder is gone. A holder unrenewed for :data:`GIVE_UP_FACTOR` intervals gives it up."""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from sentsweep.errors import SentsweepError, StorageError
from sentsweep.platform.folder.lock_stores import LockStore, lock_store
from sentsweep.platform.location import SweepLocation, sweep_owner
from sentsweep.trainables.loop_folder import process_alive

log = logging.getLogger(__name__)

#: Seconds between heartbeats; a lock expires after :data:`EXPIRY_FACTOR` of them without one.
HEARTBEAT_S = 30.0
EXPIRY_FACTOR = 3.0
#: Its holder gives the lock up after this many intervals without a renewal, before it can expire.
GIVE_UP_FACTOR = 2.0
#: How many times a lock that changed while it was being taken is read again before the take is refused.
TAKE_ATTEMPTS = 3


class LockHeldError(SentsweepError):
    """Another live process holds the sweep's lock."""


class LockLost(SentsweepError):
    """Another driver took over this sweep's lock, or this one could not renew it: it stops."""


def pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def boot_id() -> str | None:
    """This machine's boot (Linux): two machines, or two boots of one, never share it."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as found:
            return found.read().strip() or None
    except OSError:
        return None


def _printable(text: object) -> str:
    """``text`` as one short printable line: the record may come from a folder others can write."""
    return "".join(c for c in str(text) if c.isprintable())[:100]


@dataclass(frozen=True)
class LockRecord:
    owner: str
    host: str
    pid: int
    pid_ns: str | None  # the holder's PID namespace (:func:`pid_namespace`); None where unknown
    token: str
    heartbeat: float  # epoch seconds of the last renewal
    expires: float  # epoch seconds after which another driver may take the lock over
    released: bool = False  # its holder ended and gave it back
    boot: str | None = None  # the holder's :func:`boot_id`; None where unknown

    @classmethod
    def parse(cls, data: bytes | None) -> LockRecord | None:
        try:
            found = json.loads(data or b"null")  # no data: None, whose fields are a TypeError
            record = cls(owner=_printable(found["owner"]), host=_printable(found["host"]), pid=int(found["pid"]),
                         pid_ns=found.get("pid_ns"), token=str(found["token"]), heartbeat=float(found["heartbeat"]),
                         expires=float(found["expires"]), released=found.get("released") is True,
                         boot=found["boot"] if isinstance(found.get("boot"), str) else None)
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return record if record.pid_ns is None or isinstance(record.pid_ns, str) else None

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode("utf-8")

    def expired(self, now: float) -> bool:
        """Released, past its expiry, or held by a process of this host and PID namespace that is gone."""
        return self.released or now > self.expires or (self.local() and not process_alive(self.pid))

    def local(self) -> bool:
        """Whether :attr:`pid` is visible here: same host, same known PID namespace (containers share a hostname,
        not process ids) and, where the record names one, the same boot (machines may share a hostname and the
        host's PID namespace id)."""
        return (self.host == socket.gethostname() and self.pid_ns is not None and self.pid_ns == pid_namespace()
                and (self.boot is None or self.boot == boot_id()))

    def holder(self) -> str:
        return f"{self.owner}@{self.host} (pid {self.pid})"


class SweepLock:
    """The lock of one sweep folder, held for a ``with`` block; ``clock`` gives epoch seconds."""

    def __init__(self, store: LockStore, *, sweep_name: str, interval_s: float | None = None,
                 on_lost: Callable[[str], None] | None = None, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.sweep_name = sweep_name
        self.interval_s = HEARTBEAT_S if interval_s is None else interval_s
        self.on_lost = on_lost
        self.clock = clock
        self.token = secrets.token_hex(16)
        self.lost: str | None = None  # why the lock was lost (one line); None while held
        self._version: str | None = None  # the store's version of what this holder last wrote
        self._renewed = 0.0  # clock time of that write
        self._failing = False  # the last renewal failed (one warning per storage outage)
        self._stop = threading.Event()
        self._mutex = threading.Lock()  # one store transition at a time: the heartbeat's or the release's
        self._thread: threading.Thread | None = None

    @classmethod
    def for_folder(cls, location: SweepLocation, sweep_name: str,
                   on_lost: Callable[[str], None] | None = None) -> SweepLock:
        return cls(lock_store(location), sweep_name=sweep_name, on_lost=on_lost)

    def _record(self, now: float, *, released: bool = False) -> LockRecord:
        return LockRecord(sweep_owner(), socket.gethostname(), os.getpid(), pid_namespace(), self.token, now,
                          now + EXPIRY_FACTOR * self.interval_s, released, boot_id())

    def take(self) -> None:
        """Take the lock (no heartbeat): :class:`LockHeldError` while another live process holds it."""
        held = None
        for _ in range(TAKE_ATTEMPTS):
            now = self.clock()
            mine = self._record(now).to_bytes()
            stored = self.store.read()
            held = LockRecord.parse(stored.data) if stored is not None else None
            if held is not None and stored is not None and held.token == self.token and not held.released:
                # this holder's own write, answered as a failed condition (a retried request after a lost answer)
                self._version, self._renewed = stored.version, held.heartbeat
                return
            if held is not None and not held.expired(now):
                raise LockHeldError(f"the sweep is being run by {held.holder()}, heartbeat "
                                    f"{now - held.heartbeat:.0f}s ago; stop that process, or retry after its lock "
                                    f"expires (in {max(held.expires - now, 0):.0f}s without a heartbeat; "
                                    f"{self.store.uri})")
            if (version := self.store.write(mine, stored.version if stored is not None else None)) is not None:
                self._version, self._renewed = version, now
                return
            # another process wrote the lock between the read and the write: read it again
        raise LockHeldError(f"another process took the sweep's lock while this one tried {TAKE_ATTEMPTS} times "
                            f"(last seen: {held.holder() if held else 'none'}); retry ({self.store.uri})")

    def acquire(self) -> None:
        self.take()
        self._thread = threading.Thread(target=self._run, name="sentsweep-lock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        delay = self.interval_s
        while not self._stop.wait(delay):
            delay = self.beat()

    def beat(self) -> float:
        """Renew the lock if it is still this holder's; the seconds until the next heartbeat."""
        with self._mutex:
            if self._stop.is_set() or self._version is None:
                return self.interval_s
            now = self.clock()
            try:
                if (version := self.store.write(self._record(now).to_bytes(), self._version)) is None:
                    return self._changed(now)
            except Exception as exc:  # noqa: BLE001 - a storage error (or any other) is retried, then gives up
                return self._failed(self.clock(), exc)  # when it failed: a write that timed out took its time
            if self._failing:
                log.warning("the lock of sweep %s is renewed again", self.sweep_name)
            self._version, self._renewed, self._failing = version, now, False
            return self.interval_s

    def _changed(self, now: float) -> float:
        """The lock changed: this holder's write whose answer was lost (adopted), or another driver's (lost)."""
        stored = self.store.read()
        held = LockRecord.parse(stored.data) if stored is not None else None
        if held is not None and stored is not None and held.token == self.token and not held.released:
            self._version, self._renewed = stored.version, held.heartbeat
            return self.interval_s
        by = f" ({held.holder()})" if held is not None and held.token != self.token else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        self._lose(f"another driver{by} took over sweep {self.sweep_name}'s lock by {when}; this one stops")
        return self.interval_s

    def _failed(self, now: float, exc: Exception) -> float:
        """A failed renewal: try again soon, and give the lock up before it can expire (no try begins after
        :data:`GIVE_UP_FACTOR` intervals: one that takes its timeouts still ends before the lock expires)."""
        unrenewed = now - self._renewed
        left = GIVE_UP_FACTOR * self.interval_s - unrenewed
        if left <= 0:
            self._lose(f"the lock of sweep {self.sweep_name} could not be renewed for {unrenewed:.0f}s "
                       f"({_printable(exc)}); another driver may take it over after "
                       f"{EXPIRY_FACTOR * self.interval_s:.0f}s: this one stops")
            return self.interval_s
        if not self._failing:
            log.warning("the lock of sweep %s could not be renewed (%s); trying again, and stopping the sweep "
                        "after %.0fs without a renewal", self.sweep_name, exc, GIVE_UP_FACTOR * self.interval_s)
            self._failing = True
        return min(self.interval_s / 6, left)

    def _lose(self, why: str) -> None:
        """Stop the heartbeat for good and tell ``on_lost`` once."""
        self._stop.set()
        if self.lost is not None:
            return
        self.lost = why
        log.warning("%s", why)
        if self.on_lost is not None:
            self.on_lost(why)

    def release(self) -> None:
        """Mark the lock released if still this holder's; a failing storage leaves it to expire."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)  # a renewal under way: bounded by the store's timeouts
        with self._mutex:
            if self.lost is not None or self._version is None:
                return
            version, self._version = self._version, None
            try:
                if self.store.write(self._record(self.clock(), released=True).to_bytes(), version) is None:
                    log.debug("the lock of sweep %s changed before its release: left as it is", self.sweep_name)
            except StorageError as exc:
                log.warning("the lock of sweep %s could not be released (%s): it expires in %.0fs", self.sweep_name,
                            exc, EXPIRY_FACTOR * self.interval_s)

    def __enter__(self) -> SweepLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

