"""One driver per sweep: a lease held as a heartbeat tag on the sweep's parent run.

The tag ``sentsweep.lease`` holds who runs the sweep (owner, host, pid and PID namespace, a random token) and when
it last said so. The driver that opens or resumes a sweep acquires the lease, and a daemon thread refreshes it every
``interval_s`` seconds; a lease whose heartbeat is older than ``3 * interval_s`` (the holder was killed, or
its node lost), or whose holder was a process of this host and PID namespace that no longer exists, has expired and
may be taken over (a record without a namespace, written by an older version, expires by its age only: containers
sharing the host's network share its hostname, not its process ids). A second ``sentsweep resume`` of a sweep whose
lease is live is refused with :class:`LeaseHeldError`, naming the holder.

MLflow tags have no compare-and-set, so acquiring writes the tag, waits ``settle_s`` and reads it back:
of two processes that write at the same moment, only the last writer reads its own token and proceeds.

Each heartbeat reads the tag before it writes: a holder whose process was paused for longer than the expiry may
find on its return that another driver took the sweep over (``sentsweep resume``). It then never writes the tag
again: the heartbeat stops, :attr:`SweepLease.lost` says why, and ``on_lost`` is called with that line, so the driver
stops the sweep (:class:`LeaseLost`, raised by :class:`~sentsweep.platform.stopping.StopWatch` at Tune's next step)
and leaves the parent run, its trials' runs and the budget count to the new holder.

A holder that cannot renew its lease fences itself only when the tracking server says that it may not hold it.
Once the lease has gone unrenewed for :data:`FENCE_FACTOR` intervals (2 of the 3 after which another driver may take
it over), a watchdog thread tries a renewal itself (a fresh request: the heartbeat's own may sit in MLflow's retry
backoff) and waits for it :data:`RENEW_DEADLINE_S` at most (:meth:`SweepLease._renews_now`):

- the renewal finds another driver's token in the tag: the lease is given up as above;
- the server refuses it (:func:`refuses_lease`: 401 or 403, e.g. this driver's credentials were rotated, or
  ``RESOURCE_DOES_NOT_EXIST`` for the parent run): the lease is given up the same way, before it can expire, so that
  two drivers do not run the sweep at once (another one, whose writes the server takes, may take it over once it
  expires); the parent run is left ``RUNNING`` for a resume;
- the store answers this driver's probe (:func:`server_answers`) but the renewal fails anyway (a 5xx, a timeout, a
  database error, no answer by the deadline): the lease is given up too. The failure may be this driver's alone (an
  MLflow replica in trouble while the other serves a driver that takes the sweep over), and a stop is resumable;
- a tracking store that answers nobody is an *outage*, and the sweep goes on however long it lasts while the
  watchdog keeps trying (one warning per outage): the probe (a read of the store, not the server's ``/health``,
  which MLflow answers without touching any store, also while the PostgreSQL behind it is down) gets no answer, a
  5xx, a timeout or a refused connection. For a URI without a probe (sqlite) an error that is not a refusal is an
  outage, among them an MLflow error that names the store's database layer
  (:data:`~sentsweep.tracking.reachability.DATABASE_FAILURES`).
  Stopping in an outage would protect nothing: a driver can
  take the lease over only by reading the tag, finding it expired and writing its own, through the same store, which
  answers nobody; and it would cost the sweep its running trials' work since their last checkpoint
  (:class:`LeaseLost` stops Tune without a drain). The sweep folder keeps what the trials report meanwhile (``sentsweep
  sync`` writes it to MLflow: :mod:`sentsweep.tracking.trial_runs`).

What this cannot tell apart is a partition that cuts this driver, and only it, off the server (or a gateway that
answers 5xx to it alone): another driver could take the sweep over then, and this one learns of it at its first
heartbeat after the partition (above). A tracking URI that is not HTTP (a database the driver writes directly) has
no probe: its renewals' errors are told apart the same way.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sentsweep.errors import SentsweepError
from sentsweep.platform.sweep_identity import sweep_owner
from sentsweep.tracking.reachability import first_line, is_database_failure, store_answers

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from sentsweep.platform.storage import SweepLocation

log = logging.getLogger(__name__)

LEASE_TAG = "sentsweep.lease"
#: In the sweep folder: the release secrets of leases whose holders ended while the tracking server answered nobody
#: (their tag could not be removed), so that a resume or ``sentsweep sync`` need not wait for them to expire.
RELEASED_FILE = "lease-released.json"
RELEASED_KEPT = 10
#: Seconds between heartbeats; a lease expires after :data:`EXPIRY_FACTOR` of them without one.
HEARTBEAT_S = 30.0
EXPIRY_FACTOR = 3.0
#: Its holder gives the lease up after this many intervals without renewing it (before it can expire), when the
#: tracking server refuses it (:func:`refuses_lease`).
FENCE_FACTOR = 2.0
#: Seconds between the holder's probes of a tracking server that answered nobody (:class:`SweepLease`'s watchdog).
OUTAGE_PROBE_S = 5.0
#: Seconds the watchdog waits at most for its own renewal, tried once the tracking store answers.
RENEW_DEADLINE_S = 10.0
#: MLflow error codes with which the tracking server refuses this holder its lease: its credentials (401, 403), or the
#: parent run (not on this server). The holder fences itself on them (:func:`refuses_lease`), on nothing else.
REFUSAL_CODES = frozenset({"UNAUTHENTICATED", "CUSTOMER_UNAUTHORIZED", "PERMISSION_DENIED", "RESOURCE_DOES_NOT_EXIST"})


class LeaseHeldError(SentsweepError):
    """Another live process holds the sweep's lease."""


class LeaseLost(SentsweepError):
    """Another driver took over the lease of the sweep this process drives: this one stops."""


@dataclass(frozen=True)
class LeaseRecord:
    """The content of the lease tag."""

    owner: str
    host: str
    pid: int
    token: str
    heartbeat: float  # epoch seconds of the last refresh
    interval_s: float
    pid_ns: str | None = None  # the holder's PID namespace (:func:`pid_namespace`); None in older records
    #: sha256 of a secret only the holder knows, which it writes to the sweep folder when it ends in a tracking
    #: outage (:data:`RELEASED_FILE`): the token is public (anyone who can read the run reads the tag), the secret
    #: is not, so a note planted in a shared bucket cannot free a live lease.
    release_hash: str | None = None

    @classmethod
    def parse(cls, text: str | None) -> LeaseRecord | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            known = {f.name for f in fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in known})  # a newer version's extra fields: ignored
        except (AttributeError, TypeError, ValueError):
            return None  # an unreadable lease holds nothing

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def expired(self, now: float | None = None) -> bool:
        """Without a heartbeat for :data:`EXPIRY_FACTOR` intervals, or held by a process of this host and PID
        namespace that is gone (a driver killed here frees its sweep at once)."""
        stale = (now or time.time()) - self.heartbeat > EXPIRY_FACTOR * self.interval_s
        return stale or (self.local() and not _alive(self.pid))

    def local(self) -> bool:
        """Whether :attr:`pid` names a process this one can see: same host and same (known) PID namespace."""
        return self.host == socket.gethostname() and self.pid_ns is not None and self.pid_ns == pid_namespace()

    def holder(self) -> str:
        return f"{self.owner}@{self.host} (pid {self.pid})"


class Renewal(enum.Enum):
    """How a renewal tried by the watchdog went (:meth:`SweepLease._renews_now`)."""

    RENEWED = "renewed"  # or it found the lease taken over: lost already
    REFUSED = "refused"  # the server refuses the lease (:func:`refuses_lease`): fence
    OUTAGE = "outage"  # anything else: keep the sweep running, try again


def server_answers(client: MlflowClient) -> bool:
    """Whether the tracking store of ``client`` answers (:func:`~sentsweep.tracking.reachability.probe`: a
    read of the store, no retries; ``/health`` answers without it); True for a tracking URI that is not HTTP (nothing
    to probe: its calls' errors decide)."""
    uri = str(client.tracking_uri)
    return urlsplit(uri).scheme not in ("http", "https") or store_answers(uri)


def refuses_lease(exc: BaseException) -> bool:
    """Whether ``exc``, from reading or writing the lease, is the tracking server refusing this holder the lease
    (:data:`REFUSAL_CODES`), not an outage (a 5xx, a timeout, a refused connection, an error of the store's database
    layer: :func:`~sentsweep.tracking.reachability.is_database_failure`)."""
    from mlflow.exceptions import MlflowException

    if not isinstance(exc, MlflowException) or exc.error_code not in REFUSAL_CODES:
        return False
    return not is_database_failure(exc)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def pid_namespace() -> str | None:
    """This process's PID namespace (``pid:[4026531836]``), None where ``/proc`` does not say (not Linux)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class SweepLease:
    """The lease of parent run ``run_id``: ``with SweepLease(client, run_id):`` holds it for the block."""

    def __init__(self, client: MlflowClient, run_id: str, *, interval_s: float | None = None,
                 settle_s: float = 1.0, sweep_name: str | None = None,
                 on_lost: Callable[[str], None] | None = None, location: SweepLocation | None = None) -> None:
        self.client = client
        #: The sweep folder, where a holder that ends in a tracking outage notes its lease released
        #: (:data:`RELEASED_FILE`); None: such a lease expires by its age.
        self.location = location
        self.run_id = run_id
        self.interval_s = HEARTBEAT_S if interval_s is None else interval_s
        self.settle_s = settle_s
        self.sweep_name = sweep_name or f"of run {run_id}"
        self.on_lost = on_lost
        self.token = secrets.token_hex(8)
        self._release_secret = secrets.token_hex(16)  # its hash goes in the record (LeaseRecord.release_hash)
        #: Why the lease was lost (one line), once a heartbeat found another driver's token or the server refused it
        #: after :data:`FENCE_FACTOR` intervals unrenewed; None while held.
        self.lost: str | None = None
        self._stop = threading.Event()
        self._lost_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None
        self._renewed = time.monotonic()  # when the heartbeat now in the tag was taken (once written)

    def current(self) -> LeaseRecord | None:
        """The lease as the parent run holds it now."""
        return LeaseRecord.parse(self.client.get_run(self.run_id).data.tags.get(LEASE_TAG))

    def _record(self) -> LeaseRecord:
        return LeaseRecord(sweep_owner(), socket.gethostname(), os.getpid(), self.token, time.time(),
                           self.interval_s, pid_namespace(), _digest(self._release_secret))

    def _write(self) -> None:
        taken = time.monotonic()  # before the record's heartbeat: never later than what the others age it by
        self.client.set_tag(self.run_id, LEASE_TAG, self._record().to_json())
        self._renewed = taken

    def _refuse_if_held(self, record: LeaseRecord | None) -> None:
        if record is None or record.token == self.token or record.expired() or self._released(record):
            return
        age = time.time() - record.heartbeat
        left = EXPIRY_FACTOR * record.interval_s - age
        raise LeaseHeldError(f"the sweep is being run by {record.holder()}, heartbeat {age:.0f}s ago; stop "
                             f"that process, or retry after its lease expires (in {max(left, 0):.0f}s without "
                             "a heartbeat)")

    def acquire(self) -> None:
        """Take the lease (refused while another live process holds it) and start the heartbeat."""
        self._refuse_if_held(self.current())
        self._write()
        time.sleep(self.settle_s)
        self._refuse_if_held(self.current())  # another process wrote after us: it has the lease
        self._thread = threading.Thread(target=self._beat, name="sentsweep-lease", daemon=True)
        self._thread.start()
        self._watchdog = threading.Thread(target=self._watch, name="sentsweep-lease-fence", daemon=True)
        self._watchdog.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self._renew()
            except Exception:  # noqa: BLE001 - a short tracking outage must not end the sweep: the watchdog fences
                continue

    def _renew(self) -> None:
        """Read the lease and, while it is still this holder's, write a new heartbeat (give it up otherwise)."""
        held = self.current()
        if held is None or held.token != self.token:  # taken over (or released) by another driver
            self._give_up(held)
            return
        if self._stop.is_set():  # fenced while reading: the lease may be another driver's soon
            return
        self._write()

    def _renews_now(self) -> tuple[Renewal, str]:
        """One renewal tried now, and how it went (with the first line of its error): not tried while the tracking
        store answers nobody (:func:`server_answers`), and given :data:`RENEW_DEADLINE_S` at most, or half the time
        left before the lease can expire, so that a fence comes first.

        The heartbeat's own request may still sit in MLflow's retry backoff (7 retries, backoff 2 by default: its
        next try can be a minute away) when the server is back from an outage; a fresh request goes out at once."""
        if not server_answers(self.client):
            return Renewal.OUTAGE, "the tracking store answers nobody"
        # The store answered this driver's probe: a renewal that fails anyway (a 5xx, a timeout, a database error) may
        # be this driver's alone (an MLflow replica in trouble, its other replica serving a driver that takes over),
        # so it fences; only a store that answers nobody is an outage (diff review 18). A URI without a probe (sqlite)
        # tells its errors apart instead.
        probed = urlsplit(str(self.client.tracking_uri)).scheme in ("http", "https")
        finished = threading.Event()
        failures: list[Exception] = []

        def attempt() -> None:
            try:
                self._renew()
            except Exception as exc:  # noqa: BLE001 - told apart below
                failures.append(exc)
            finally:
                finished.set()

        threading.Thread(target=attempt, name="sentsweep-lease-renew", daemon=True).start()
        deadline = min(RENEW_DEADLINE_S, (EXPIRY_FACTOR - FENCE_FACTOR) * self.interval_s / 2)
        if not finished.wait(deadline):
            return (Renewal.REFUSED if probed else Renewal.OUTAGE), f"no answer within {deadline:.0f}s"
        if not failures:
            return Renewal.RENEWED, ""
        log.debug("lease renewal failed", exc_info=failures[0])
        fence = probed or refuses_lease(failures[0])
        return (Renewal.REFUSED if fence else Renewal.OUTAGE), first_line(failures[0])

    def _watch(self) -> None:
        """Fence: once the lease went :data:`FENCE_FACTOR` intervals unrenewed (also while a heartbeat's request
        hangs), try a renewal (:meth:`_renews_now`) and give the lease up if the tracking server refuses it, before
        another driver may take the sweep over; during an outage, try again every interval (at most
        :data:`OUTAGE_PROBE_S`), and say so once per outage."""
        limit = FENCE_FACTOR * self.interval_s
        outage = False
        while not self._stop.wait(max(0.0, self._renewed + limit - time.monotonic()) + 0.05):
            if time.monotonic() - self._renewed < limit:
                outage = False
                continue
            renewal, why = self._renews_now()
            if renewal is Renewal.REFUSED:
                self._lose(f"the lease of sweep {self.sweep_name} could not be renewed for "
                           f"{time.monotonic() - self._renewed:.0f}s: the tracking server answers but does not renew "
                           f"it ({why}); another "
                           f"driver may take it over after {EXPIRY_FACTOR * self.interval_s:.0f}s: this one stops")
                return
            if renewal is Renewal.RENEWED:
                outage = False
                continue
            if not outage:
                log.warning("the lease of sweep %s cannot be renewed during a tracking outage (%s): the sweep goes on "
                            "(nobody can take the lease over while the store answers nobody), renewing it once the "
                            "store answers", self.sweep_name, why)
                outage = True
            self._stop.wait(min(self.interval_s, OUTAGE_PROBE_S))

    def _give_up(self, held: LeaseRecord | None) -> None:
        """Another driver holds (or held and released) the lease: never write it again, and say so once."""
        by = f" ({held.holder()})" if held is not None else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
        self._lose(f"another driver{by} took over sweep {self.sweep_name}'s lease by {when}; this one stops")

    def _lose(self, why: str) -> None:
        """Stop the heartbeat for good, record ``why`` and tell ``on_lost`` (once: the first reason counts)."""
        with self._lost_lock:
            self._stop.set()
            if self.lost is not None:
                return
            self.lost = why
        log.warning("%s", why)
        if self.on_lost is not None:
            self.on_lost(why)

    def release(self) -> None:
        """Stop the heartbeat and remove the lease if it is still ours (a lost lease is left to its holder). While the
        tracking server answers nobody, the release is noted in the sweep folder instead (:data:`RELEASED_FILE`)."""
        self._stop.set()
        for thread in (self._thread, self._watchdog):
            if thread is not None:
                thread.join(timeout=5)
        try:
            if server_answers(self.client):  # not MLflow's retries (minutes) at the end of a sweep in an outage
                held = self.current()
                if held is not None and held.token == self.token:
                    self.client.delete_tag(self.run_id, LEASE_TAG)
                return
        except Exception:  # noqa: BLE001 - unreachable tracking: noted below, else the lease expires by itself
            log.debug("the lease tag could not be removed", exc_info=True)
        self._note_released()

    def _note_released(self) -> None:
        """Add this lease's release secret to the sweep folder's :data:`RELEASED_FILE` (the last
        :data:`RELEASED_KEPT`)."""
        if self.location is None:
            return
        try:
            released = [*self._released_secrets()[-(RELEASED_KEPT - 1):], self._release_secret]
            self.location.write_text(RELEASED_FILE, json.dumps({"released": released}))
        except Exception as exc:  # noqa: BLE001 - the lease then expires by its age
            log.warning("the release of sweep %s's lease could not be noted in its folder (%s): it expires in %.0fs",
                        self.sweep_name, exc, EXPIRY_FACTOR * self.interval_s)

    def _released_secrets(self) -> list[str]:
        if self.location is None:
            return []
        notes = self.location.read_json_object(RELEASED_FILE, "the leases released in a tracking outage")
        return [str(secret) for secret in (notes or {}).get("released", [])]

    def _released(self, record: LeaseRecord) -> bool:
        """Whether the holder of ``record`` ended in a tracking outage and noted its lease released (the secret
        whose hash the record holds)."""
        return record.release_hash is not None and any(
            secrets.compare_digest(_digest(secret), record.release_hash) for secret in self._released_secrets())

    def __enter__(self) -> SweepLease:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


@contextlib.contextmanager
def lease_if_answering(client: MlflowClient, run_id: str, sweep_name: str,
                       location: SweepLocation | None = None) -> Iterator[SweepLease | None]:
    """The sweep's lease for a block that writes its runs to MLflow without running it (``sentsweep sync``): refused
    with :class:`LeaseHeldError` while another live driver holds it (that driver delivers them itself: twice would
    log every entry twice); none while the tracking server answers nobody (nothing can be delivered, nor can anyone
    take the sweep over), nor when the parent run cannot be read (the block reports what stays pending)."""
    from mlflow.exceptions import MlflowException

    if not server_answers(client):
        yield None
        return
    lease = SweepLease(client, run_id, sweep_name=sweep_name, location=location)
    try:
        lease.acquire()
    except MlflowException as exc:
        log.warning("the lease of sweep %s could not be taken (%s): delivering without it", sweep_name,
                    str(exc).splitlines()[0][:300])
        yield None
        return
    try:
        yield lease
    finally:
        lease.release()
