"""Delivering a :class:`~sentsweep.tracking.journal.Journal` to MLflow, in order, exactly once.

:class:`Replayer` sends the entries after the delivered offset and moves the offset past each one it
delivered, or set aside as refused for good (logged as a note in the journal's state). MLflow's refusals (a run
deleted meanwhile, a param changed: :data:`REFUSED_CODES`) are given up only once the same refusal came back on
:data:`REFUSALS_TO_GIVE_UP` attempts over :data:`REFUSAL_SPAN_S` (counted in the journal's state); until then the
entry stays pending and the replay of its journal stops there (entries are ordered). An MLflow error that names
the server's database is an outage whatever its code (:data:`DATABASE_FAILURES`: MLflow answers a pool timeout
as ``BAD_REQUEST``). A refused ``open`` is never passed, even for good: the entries after it need its run, so the
journal stays parked there, pending (one warning naming the trial and the refusal), and a ``follow`` of it waits.
Every entry is idempotent on its own, so that a call that succeeded on the server but timed out on the
client, or a journal replayed from a stale copy, adds nothing twice:

- ``open`` searches the trial's run by tag before creating one (once, whatever MLflow's client retries:
  :func:`~sentsweep.tracking.run_creation.create_run_once`), and tells a retry of its own create
  (the run carries the attempt's ``token``) from a run of an earlier attempt (reattached: RUNNING again,
  attempt count + 1); in a journal of an attempt a later one superseded (a copy set aside,
  :mod:`sentsweep.tracking.journal_mirror`) it only looks the run up, so that the late delivery of a lost
  attempt never reopens the run its successor ended;
- ``params`` logs only the keys the run lacks; ``tags``, ``artifacts`` and ``json_artifact`` overwrite with the
  same content; ``inputs`` (dataset inputs) are stored once per run by MLflow itself;
- ``metrics`` skips points the run already has (same key, value, timestamp and step), reading a key's
  history once per run unless the run was created by this replayer; in the journal of an attempt that reattached to
  an earlier attempt's run, it also skips the points of steps that attempt logged (the steps a trial restored from
  a checkpoint trains again: logged twice, each key's curve would hold two points at each of them, which MLflow
  cannot delete), and in a superseded journal those of every step the run has (its successor's);
- ``register`` registers a logged model once per run and model name;
- ``finish`` leaves a run alone that is already over when asked to (``if_running``), and is void when a
  later attempt of the trial opened the run again (``void_after``: a worker journal and its length when the
  driver wrote the entry).

A replayer acts only on the runs of the sweep it replays for (:class:`~sentsweep.tracking.run_scope.SweepScope`: the
sweep's experiment, its parent run, the children of that run and those of its confirmation run), whatever a journal
or its state file names: a journal copied through the sweep's storage may have been planted by anyone who can write
there, and is replayed with the MLflow identity of whoever runs ``sentsweep sync`` or ``resume``. An ``open`` finds or
creates its run only in that experiment, under a parent of the sweep's (the run it creates gets that parent whatever
its tags say); an entry naming any other run or place is refused for good at once (:class:`Refused`: one warning
naming the journal and the entry's kind; a refused ``open`` parks its journal, as above). Each run id is looked up
once per replayer.

:class:`Outbox` is what loggers use: append, then flush unless the tracking store is known to be down
(:class:`Reachability`). Before each delivery to an HTTP server its *store* is probed (one search of experiments with
this process's MLflow credentials, no retries, :data:`PROBE_TIMEOUT_S` at most), not its ``/health``: MLflow answers
``/health`` without touching any store, so it answers while the database behind the server is down and every store
call fails with 503 only after the client's retry budget (7 retries with backoff 2 by default: about 4 minutes of a
trial's training, or of Tune's event loop in the driver). A delivery that fails although the probe just answered (the
artifact store behind ``--serve-artifacts``, a store failing some calls, an outage that began after the probe) may
have spent that budget: no put tries again for :data:`CALL_BACKOFF_S` (doubled for each such failure in a row, up to
:data:`MAX_CALL_BACKOFF_S`), whatever the probe says (an explicit replay,
at a sweep's start and end, ``sentsweep sync`` or ``resume``, tries once the probe answers). The budget itself
is not shortened for these deliveries: MLflow's client reads ``MLFLOW_HTTP_REQUEST_MAX_RETRIES``, ``..._TIMEOUT`` and
``..._BACKOFF_FACTOR`` from the process's environment at every request, and neither :class:`~mlflow.MlflowClient` nor
its artifact repositories take them per client or per call, so they are left to the user (set for the driver, they
reach the trials of a Ray session the sweep starts or joins: :data:`~sentsweep.platform.tracking_store.
CLIENT_ENV_PREFIXES`). Neither an
unreachable server nor a journal the disk cannot take (``ENOSPC``) makes :meth:`Outbox.put` raise: entries the
journal refused are kept in memory (:class:`Unwritten`, at most :data:`MAX_UNWRITTEN` per journal, one warning per
episode) and appended, in order, before anything newer at the next put or replay in this process.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException

from sentsweep.tracking.datasets import log_dataset_inputs
from sentsweep.tracking.journal import (
    DRIVER_JOURNALS,
    STAGED,
    TRIAL_JOURNAL,
    Entry,
    Journal,
    JournalState,
    point_identity,
)
from sentsweep.tracking.run_creation import create_run_once
from sentsweep.tracking.run_scope import SweepScope
from sentsweep.tracking.system_metrics import PREFIX as SYSTEM_PREFIX
from sentsweep.tracking.vocabulary import (
    ATTEMPT_TAG,
    PARENT_TAG,
    REASON_TAG,
    ROLE_TAG,
    SWEEP_DIR_TAG,
    TERMINAL,
    TOKEN_TAG,
    TRIAL_ROLE,
    find_trial_run,
    param_value,
)

log = logging.getLogger("sentsweep.tracking")

#: MLflow error codes of a refusal (retrying will not help, unless the error names the database:
#: :data:`DATABASE_FAILURES`): the entry is set aside (a note in the journal's state) once the same refusal came back
#: :data:`REFUSALS_TO_GIVE_UP` times over :data:`REFUSAL_SPAN_S`.
REFUSED_CODES = frozenset({"INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST", "RESOURCE_ALREADY_EXISTS",
                           "BAD_REQUEST", "INVALID_STATE"})
#: What the message of an MLflow error names when the server's database failed (lowercase; matched whatever the
#: error's code). MLflow's server answers every SQLAlchemyError but an OperationalError as BAD_REQUEST, HTTP 400
#: (``mlflow/store/db/utils.py``, ``make_managed_session``), which its client does not retry: a pool timeout under
#: load ("QueuePool limit ... reached"), a connection closed under it (``InterfaceError``), a session to roll back
#: (``PendingRollbackError``). Such an error is an outage, never a refusal.
DATABASE_FAILURES = ("sqlalchemy", "psycopg", "pymysql", "sqlite3", "queuepool", "operationalerror",
                     "connection already closed", "could not connect", "server closed the connection",
                     "pendingrollback", "database is locked")
#: An entry MLflow refuses is given up only after the same refusal on this many attempts...
REFUSALS_TO_GIVE_UP = 3
#: ... the last of them at least this many seconds after the first (a refusal that is a passing failure in disguise
#: goes away meanwhile).
REFUSAL_SPAN_S = 600.0
#: Seconds a probe of a tracking server's store (:meth:`Reachability.probe`) may take.
PROBE_TIMEOUT_S = 3.0
#: What the probe asks: one experiment, read from the store (``/health`` reads nothing).
PROBE_ENDPOINT = "/api/2.0/mlflow/experiments/search"
#: The HTTP statuses MLflow's client retries (``mlflow.utils.request_utils``), spending its retry budget on a call:
#: a probe answered with one of them (503 from a database that is down, a 500, a gateway's 502 or 504) got no answer
#: from the store.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: Seconds after a probe the store did not answer (or a failed delivery to a non-HTTP store, sqlite) before the next.
RETRY_AFTER_S = 5.0
#: Seconds without a delivery to an HTTP server after one failed although its store had just answered the probe.
CALL_BACKOFF_S = 60.0
#: ... doubled after each such failure in a row, up to this (a failing artifact store behind a server that answers:
#: each retry of its upload may spend MLflow's retry budget, about 4 minutes, in a trial's training or Tune's loop).
MAX_CALL_BACKOFF_S = 1800.0


#: Tags that place a run in a sweep's hierarchy and in ``compare``'s listing: set by the sweep's own code when it
#: creates a run, never by a journal (a planted one could list a trial as a sweep, or hang it under another run).
STRUCTURE_TAGS = frozenset({ROLE_TAG, PARENT_TAG, SWEEP_DIR_TAG})

class Refused(Exception):
    """An entry the replayer itself refuses (outside the sweep's runs, malformed): given up at once."""


#: What :func:`refusal_of` calls a :class:`Refused`.
OWN_REFUSAL = "replayer"


class Waiting(Exception):
    """A ``follow`` entry whose journal stopped short of the entries it names (one there waits on a refusal)."""


def is_database_failure(exc: BaseException) -> bool:
    """Whether ``exc`` names a failure of the MLflow server's database (:data:`DATABASE_FAILURES`)."""
    text = str(exc).lower()
    return any(marker in text for marker in DATABASE_FAILURES)


def refusal_of(exc: BaseException) -> str | None:
    """What refused an entry, when ``exc`` is a refusal: the replayer (:class:`Refused`) or MLflow (its error code,
    :data:`REFUSED_CODES`, unless the error names the server's database); None for anything else (an outage)."""
    if isinstance(exc, Refused):
        return OWN_REFUSAL
    if isinstance(exc, MlflowException) and exc.error_code in REFUSED_CODES and not is_database_failure(exc):
        return str(exc.error_code)
    return None


class Replayer:
    """Sends journal entries with one client to the runs of one sweep (``scope``); remembers the metric points it
    knows each run has."""

    def __init__(self, client: MlflowClient, scope: SweepScope, clock: Callable[[], float] = time.time) -> None:
        """``clock``: seconds since the epoch (when an entry was first refused is kept in the journal's state)."""
        self.client = client
        self.scope = scope
        self.clock = clock
        self.created: set[str] = set()
        self.reattached: set[str] = set()
        self.registered: dict[str, str] = {}  # model name -> the version this replayer registered
        self._known: dict[tuple[str, str], KeyHistory] = {}  # (run, key) -> what the run holds of that key

    def forget(self, run_id: str | None) -> None:
        """Read ``run_id``'s metric histories again before the next points: someone else may have logged some
        (a driver replaying a copy of this journal, :mod:`sentsweep.tracking.journal_mirror`)."""
        self.created.discard(run_id or "")
        for key in [k for k in self._known if k[0] == run_id]:
            del self._known[key]

    def flush(self, journal: Journal, upto: int | None = None, *, superseded: bool = False) -> JournalState:
        """Deliver the pending entries (the first ``upto`` at most; ``superseded``: the journal of an attempt a later
        one replaced, whose ``open`` never reattaches); a transient error propagates, with the entries before it
        delivered and counted. A refused entry stops the flush, pending, until it is given up (:meth:`_gives_up`);
        then it is set aside, unless it is an ``open``: the journal stays parked there, the entries after it needing
        its run."""
        if not journal.exists():  # a worker's journal on another node, or from a Ray session gone
            return journal.state()
        with journal.locked():
            state = journal.state()  # before the entries: the owner appends without the lock
            count = journal.count()
            state = journal.clamp(state, count)  # an offset past the entries a crash left
            first = state.delivered
            pending = journal.entries(first)  # only these are parsed (the journal keeps where its lines start)
            end = min(count, first + len(pending)) if upto is None else min(upto, count, first + len(pending))
            for index in range(first, end):
                entry = pending[index - first]
                try:
                    self.deliver(entry, state, journal.path.parent if journal.path else None,
                                 staged_only=in_driver_folder(journal.path), superseded=superseded)
                except Waiting:
                    journal.save_state(state)
                    return state
                except Exception as exc:
                    refusal = refusal_of(exc)
                    if refusal is None:
                        journal.save_state(state)
                        raise
                    if not self._gives_up(journal, state, index, entry, refusal, exc):
                        journal.save_state(state)
                        return state
                    state.delivered = index + 1  # set aside: the refusal stays counted for the next entry
                else:
                    state.advance(index + 1)
                journal.save_state(state)
            return state

    def _gives_up(self, journal: Journal, state: JournalState, index: int, entry: Entry, refusal: str,
                 exc: BaseException) -> bool:
        """Count the refusal ``exc`` of entry ``index`` in ``state``; whether the replay goes on past the entry, set
        aside (a note and a warning). The replayer's own refusals (:class:`Refused`) are given up at once, MLflow's
        once the same one came back on :data:`REFUSALS_TO_GIVE_UP` attempts over :data:`REFUSAL_SPAN_S` since the
        last entry delivered (so the entries after one given up that meet the same refusal go at once: a deleted
        run's). A refused ``open`` is never passed: the journal is parked on it (one warning)."""
        op = entry.get("op")
        first = state.refusal != refusal
        span = state.count_refusal(refusal, self.clock())
        final = refusal == OWN_REFUSAL or (state.refusals >= REFUSALS_TO_GIVE_UP and span >= REFUSAL_SPAN_S)
        if not final:
            if first:
                log.warning("entry %d (%s) of %s refused (%s: %s): kept, tried again at each replay, given up only "
                            "if still refused after %d attempts over %.0f min", index, op, journal, refusal, exc,
                            REFUSALS_TO_GIVE_UP, REFUSAL_SPAN_S / 60)
            return False
        if op == "open":
            if not state.parked:
                state.parked = True
                state.notes = [*state.notes[-9:], f"entry {index} (open), parked: {refusal}: {exc}"[:500]]
                log.warning("entry %d (open) of %s, the run of trial %s, refused for good (%s: %s); the journal stays "
                            "parked there, its %d later entries pending (they need that run), tried again at each "
                            "replay", index, journal, entry.get("trial_id"), refusal, exc,
                            journal.count() - index - 1)
            return False
        state.skipped += 1
        state.notes = [*state.notes[-9:], f"entry {index} ({op}): {exc}"[:500]]
        log.warning("skipped entry %d (%s) of %s, refused for good: %s", index, op, journal, exc)
        return True

    # -- one entry ------------------------------------------------------------------------------------
    def deliver(self, entry: Entry, state: JournalState, folder: Path | None = None, *,
                staged_only: bool = False, superseded: bool = False) -> None:
        """Send ``entry`` (``folder``: the journal's folder, where a staged copy may have been pulled to;
        ``staged_only``: upload staged copies only, :func:`upload_source`; ``superseded``: see :meth:`flush`)."""
        op = entry["op"]
        if op == "open":
            self._open(entry, state, superseded=superseded)
            return
        if op == "follow":
            followed = Path(entry["path"])
            if not followable(followed, folder):
                log.warning("not followed: %s, outside the journals of %s", followed, folder)
                return
            self._follow(Journal(followed), int(entry["upto"]))
            return
        if state.run_id is None:  # an open that only looks (``create`` false) found no run: a trial never started
            # (or a state written before a refused open parked its journal)
            return
        run_id = state.run_id
        self._confine(self.scope.refusal(self.client, run_id))
        if op == "params":
            logged = self.client.get_run(run_id).data.params
            new = [Param(k, param_value(v)) for k, v in entry["params"].items() if k not in logged]
            if new:
                self.client.log_batch(run_id, params=new)
        elif op == "metrics":
            self._metrics(run_id, entry["points"], float("inf") if superseded else state.relog_before_ms)
        elif op == "tags":
            structural = sorted(STRUCTURE_TAGS.intersection(entry["tags"]))
            if structural:
                raise Refused(f"a journal does not set {', '.join(structural)} (the sweep's own code does, when it "
                              "creates a run)")
            self.client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in entry["tags"].items()])
        elif op == "artifacts":
            source = upload_source(entry, folder, staged_only=staged_only)
            if source is not None:  # a worker's folder the driver cannot see is not an error
                self.client.log_artifacts(run_id, str(source), entry.get("path"))
                if entry.get("remove"):  # a copy staged for this entry alone (the driver's finalize)
                    shutil.rmtree(source, ignore_errors=True)
        elif op == "register":
            self._confine(self.scope.register_refusal(self.client, entry.get("name")))
            self._register(run_id, entry["name"], entry["path"])
        elif op == "finish":
            self._finish(run_id, entry)
        elif op == "inputs":
            log_dataset_inputs(self.client, run_id, entry["datasets"])
        elif op == "json_artifact":
            self.client.log_dict(run_id, entry["data"], entry["file"])
        elif op == "running":  # a resumed sweep's parent run; the confirmation stage's run as it begins
            self.client.update_run(run_id, status="RUNNING")
            if entry.get("reason"):
                self.client.set_tag(run_id, REASON_TAG, entry["reason"])
            elif entry.get("clear_reason") and REASON_TAG in self.client.get_run(run_id).data.tags:
                self.client.delete_tag(run_id, REASON_TAG)
        else:
            raise Refused(f"unknown journal entry '{op}'")

    def _follow(self, journal: Journal, upto: int) -> None:
        """Deliver the first ``upto`` entries of ``journal`` (those it has); :class:`Waiting` when it stopped short
        of them (an entry there waits on a refusal, or is an ``open`` refused for good)."""
        state = self.flush(journal, upto=upto)
        if state.delivered < min(upto, journal.count()):
            raise Waiting(f"{journal} stopped at entry {state.delivered}")

    @staticmethod
    def _confine(refusal: str | None) -> None:
        """Raise :class:`Refused` when ``refusal`` says why a run is not one of the sweep's (:class:`SweepScope`)."""
        if refusal is not None:
            raise Refused(f"not a run of this sweep: {refusal}")

    def _open_confined(self, refusal: str | None, state: JournalState) -> None:
        """:meth:`_confine` for an ``open`` entry: a refused one leaves the entries after it without a run."""
        if refusal is not None:
            state.run_id = None
        self._confine(refusal)

    def _open(self, entry: Entry, state: JournalState, *, superseded: bool = False) -> None:
        """Find the trial's run (or create it) in the sweep's experiment, under a parent of the sweep's: an entry
        naming any other place is refused (the entries after it then have no run), and the run it creates has that
        parent whatever its tags say. A run found for another attempt is reattached, unless ``superseded`` (this
        attempt's successor opened it: its status and attempt stay)."""
        parent = entry.get("parent_run_id")
        self._open_confined(self.scope.open_refusal(self.client, entry.get("experiment_id"), parent), state)
        trial_id = entry.get("trial_id")
        found = find_trial_run(self.client, self.scope.experiment_id, parent, trial_id) if trial_id else None
        token = entry.get("token")
        if found is None:
            if not entry.get("create", True):
                return
            tags = {k: v for k, v in dict(entry.get("tags", {})).items() if k not in STRUCTURE_TAGS}
            tags[ROLE_TAG] = TRIAL_ROLE  # what an open entry creates: a trial's run (compare lists no other)
            if parent:
                tags[PARENT_TAG] = parent
            if token:
                tags[TOKEN_TAG] = token
            run = create_run_once(self.client, self.scope.experiment_id, tags, entry.get("run_name"),
                                  entry.get("time_ms"))
            self._open_confined(self.scope.refusal_of(self.client, run), state)  # under the parent it was given
            state.run_id, state.relog_before_ms = run.info.run_id, None
            self.created.add(state.run_id)
            if entry.get("params"):  # a run the driver opens for a trial that died before its worker could
                self.client.log_batch(state.run_id, params=[Param(k, v) for k, v in entry["params"].items()])
            return
        self._open_confined(self.scope.refusal_of(self.client, found), state)  # the trial id in the filter is data
        state.run_id, state.relog_before_ms = found.info.run_id, None
        if token is None or found.data.tags.get(TOKEN_TAG) == token or superseded:
            return  # the driver's lookup, this attempt's own create answered late, or a later attempt's run
        state.relog_before_ms = float(entry.get("time_ms") or self.clock() * 1000)
        attempt = int(found.data.tags.get(ATTEMPT_TAG, "1")) + 1
        self.client.update_run(state.run_id, status="RUNNING")
        self.client.log_batch(state.run_id, tags=[RunTag(ATTEMPT_TAG, str(attempt)), RunTag(TOKEN_TAG, token)])
        if REASON_TAG in found.data.tags:
            self.client.delete_tag(state.run_id, REASON_TAG)
        self.reattached.add(state.run_id)

    def _metrics(self, run_id: str, points: Iterable[list[Any]], relog_before_ms: float | None = None) -> None:
        """Log the points the run lacks (``relog_before_ms``: :attr:`JournalState.relog_before_ms`)."""
        fresh = run_id in self.created
        batch: list[Metric] = []
        relogged = 0
        for key, value, timestamp, step in points:
            known = self._known.get((run_id, key))
            if known is None:
                known = KeyHistory.of([] if fresh else self.client.get_metric_history(run_id, key))
                self._known[(run_id, key)] = known
            identity = point_identity(key, value, timestamp, step)
            if known.holds(identity):
                continue
            first = known.first_ms.get(int(step))
            if (relog_before_ms is not None and first is not None and first < relog_before_ms
                    and not key.startswith(SYSTEM_PREFIX)):
                relogged += 1  # a step an earlier attempt logged (or, superseded, the successor did)
                continue
            batch.append(Metric(key, float(value), int(timestamp), int(step)))
            known.add(identity)
        if relogged:
            log.info("run %s: %d metric points not logged again (steps an earlier attempt of the trial logged, "
                     "trained again after a restore)", run_id, relogged)
        if not batch:
            return
        try:
            self.client.log_batch(run_id, metrics=batch)
        except Exception:
            for metric in batch:  # it may have landed server-side: read the histories again next time
                self._known.pop((run_id, metric.key), None)
            self.created.discard(run_id)
            raise

    def _register(self, run_id: str, name: str, path: str) -> None:
        """Register the run's logged model at ``path`` as a version of ``name``, unless a version of ``name``
        already comes from this run (a replay after a registration that landed, or a finalize run again after a
        crash): that version is the one reported."""
        import mlflow

        existing = self.client.search_model_versions(f"name = '{name}' and run_id = '{run_id}'")
        if existing:
            self.registered[name] = str(min(int(v.version) for v in existing))
            return
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(self.client.tracking_uri)
        try:
            version = mlflow.register_model(f"runs:/{run_id}/{path}", name)
        finally:
            mlflow.set_tracking_uri(previous)
        self.registered[name] = str(version.version)

    def _finish(self, run_id: str, entry: Entry) -> None:
        void = entry.get("void_after")
        if void and _opened_after(Path(void["path"]), int(void["upto"])):
            return
        run = self.client.get_run(run_id)
        if entry.get("if_running") and run.info.status in TERMINAL:
            return
        reason = entry.get("reason")
        if reason and (entry.get("overwrite_reason", True) or REASON_TAG not in run.data.tags):
            self.client.set_tag(run_id, REASON_TAG, reason)
        if run.info.status != entry["status"]:
            self.client.set_terminated(run_id, status=entry["status"], end_time=entry.get("time_ms"))


def set_aside_parked(journal: Journal, why: str) -> int:
    """Set aside every pending entry of a parked ``journal`` (``sentsweep sync --give-up-refused``: the user accepts
    that MLflow will never take them, e.g. the sweep's experiment was deleted), counted as skipped with a note
    naming ``why`` and the refusal; how many. The entries stay in the journal file."""
    with journal.locked():
        state = journal.state()
        count = journal.count() - state.delivered
        if not state.parked or count <= 0:
            return 0
        refusal = state.refusal
        state.skipped += count
        state.advance(state.delivered + count)
        state.notes = [*state.notes[-9:], f"{count} entries given up ({why}) after the refusal {refusal}"[:500]]
        journal.save_state(state)
    log.warning("gave up %d entries of %s, parked on an open MLflow refused for good (%s)", count, journal, refusal)
    return count


@dataclass
class KeyHistory:
    """What a run holds of one metric key: its points (:func:`~sentsweep.tracking.journal.point_identity`, kept as
    the hash of value, timestamp and step: the key is this record's, and a replayer that logs a trial for days holds
    hundreds of thousands of system-metrics points, about 250 bytes each as tuples of strings, SRE review 20) and the
    earliest timestamp logged at each step."""

    points: set[int] = field(default_factory=set)
    first_ms: dict[int, int] = field(default_factory=dict)

    def holds(self, identity: tuple[str, str, int, int]) -> bool:
        """Whether the point ``identity`` (key, value, timestamp, step) is held."""
        return hash(identity[1:]) in self.points

    @classmethod
    def of(cls, history: Iterable[Metric]) -> KeyHistory:
        """The record of a key's history as MLflow returns it."""
        known = cls()
        for m in history:
            known.add(point_identity(m.key, m.value, m.timestamp, m.step))
        return known

    def add(self, identity: tuple[str, str, int, int]) -> None:
        """Count one point (``point_identity``: key, value, timestamp, step) as held."""
        self.points.add(hash(identity[1:]))
        step, timestamp = identity[3], identity[2]
        self.first_ms[step] = min(timestamp, self.first_ms.get(step, timestamp))


def upload_source(entry: Entry, folder: Path | None = None, *, staged_only: bool = False) -> Path | None:
    """The folder an ``artifacts`` entry uploads (None when it is not there).

    A staged copy (``remove``: uploaded, then deleted) is only ever the copy of its name in
    :data:`~sentsweep.tracking.journal.STAGED` beside the journal (``folder``), wherever the entry says it was: a
    driver journal and its staged copies may have been pulled from the sweep's storage onto another machine
    (:mod:`sentsweep.platform.tracking_journals`), and a journal in the storage is as trustworthy as whoever can
    write there (on a shared cluster, every job with the bucket's keys): a path it names must never make this
    machine upload, then delete, a folder of its own. For the same reason ``staged_only`` (the journals of a
    driver's folder, :func:`in_driver_folder`: its own, which stage every upload, and the worker journals it pulled
    from the storage, whose folders are on other machines) refuses every other folder; a worker's journal on its
    own machine uploads the folder it names."""
    named = Path(entry["dir"])
    if entry.get("remove") and folder is not None:
        if named.name in ("", ".", ".."):
            return None
        staged = folder / STAGED / named.name
        return staged if staged.is_dir() and not staged.is_symlink() else None
    if staged_only:
        if named.is_dir():
            log.warning("not uploaded: %s, named by a journal copied through the storage (only staged copies are)",
                        named)
        return None
    return named if named.is_dir() else None


def followable(path: Path, folder: Path | None) -> bool:
    """Whether a ``follow`` entry of a journal in ``folder`` may name ``path``: a journal beside it (a worker journal's
    copy the driver pulled), or a trial's own journal in the sweep folder that holds the driver's journal folder (a
    local sweep). A journal copied through the storage names nothing else: not a file to lock, parse and deliver
    elsewhere on the machine that replays it."""
    if folder is None or path.suffix != ".jsonl":
        return False
    target, home = path.resolve(), folder.resolve()
    if target.parent == home:
        return True
    return home.name == DRIVER_JOURNALS and target.name == TRIAL_JOURNAL and target.parent.parent == home.parent


def in_driver_folder(path: Path | None) -> bool:
    """Whether the journal at ``path`` is in a driver's journal folder (a :data:`~sentsweep.tracking.journal.
    DRIVER_JOURNALS` folder of a sweep folder or of the cache): the driver's own journals and the copies of worker
    journals it pulled from the storage."""
    return path is not None and DRIVER_JOURNALS in path.parent.parts


def _opened_after(path: Path, upto: int) -> bool:
    """Whether the worker journal at ``path`` has an ``open`` entry after its first ``upto``."""
    return any(e.get("op") == "open" for e in Journal(path).entries(upto))


class Reachability:
    """Whether a call to a tracking URI is worth trying now, in this process (:meth:`worth_trying`)."""

    _by_uri: ClassVar[dict[str, Reachability]] = {}

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.http = urlsplit(uri).scheme in ("http", "https")
        self.down_since: float | None = None
        self.retry_at = 0.0  # time.monotonic() before which nothing is tried, nor probed (:meth:`failed`)
        self.call_failures = 0  # calls in a row that failed although the store answered the probe

    @classmethod
    def of(cls, uri: str) -> Reachability:
        if uri not in cls._by_uri:
            cls._by_uri[uri] = cls(uri)
        return cls._by_uri[uri]

    def worth_trying(self, *, backoff: bool = True) -> bool:
        """Whether a call may reach the store now: not while backing off after a failure (:meth:`failed`; ``backoff``
        False: an explicit replay, at a sweep's start and end, ``sentsweep sync`` or ``resume``, which does not wait
        for it), and for an HTTP server only when its store answers a probe (:meth:`probe`), asked before every call:
        a trial process in an outage journals at once instead of spending MLflow's retry budget (about 4 minutes by
        default, counted as the trial's compute) on a call that cannot succeed, and so does the driver (its callbacks
        would block Tune's event loop as long)."""
        if backoff and time.monotonic() < self.retry_at:
            return False
        if not self.http:
            return True
        why = self.probe()
        if why is None:
            return True
        self.failed(ConnectionError(f"{self.uri} probed: {why}"), probed=True)
        return False

    def answers(self) -> bool:
        """Whether the tracking store answers (:meth:`probe`)."""
        return self.probe() is None

    def probe(self) -> str | None:
        """Why the store of the HTTP server does not answer, None when it does: :data:`PROBE_ENDPOINT` asked once with
        this process's MLflow credentials, no retries, :data:`PROBE_TIMEOUT_S` at most. Any status but those MLflow's
        client retries (:data:`RETRIED_STATUSES`) is an answer, a refusal (401, 403) included: calls then fail at
        once, without retries."""
        from mlflow.utils.credentials import get_default_host_creds
        from mlflow.utils.rest_utils import http_request

        try:
            response = http_request(get_default_host_creds(self.uri), PROBE_ENDPOINT, "GET", params={"max_results": 1},
                                    max_retries=0, timeout=PROBE_TIMEOUT_S, raise_on_status=False)
        except Exception as exc:  # noqa: BLE001 - no answer at all: a refused connection, a timeout, TLS
            return first_line(exc)
        if response.status_code in RETRIED_STATUSES:
            return f"its store answers HTTP {response.status_code} {response.text.strip()[:200]}".rstrip()
        return None

    def failed(self, exc: BaseException, journal: Journal | None = None, *, probed: bool = False) -> None:
        """A call failed (``probed``: the probe of :meth:`worth_trying` got no answer): nothing is tried for
        :data:`RETRY_AFTER_S`, or for :data:`CALL_BACKOFF_S` after a call to an HTTP server whose store had just
        answered the probe (that call may have spent MLflow's whole retry budget, and the probe cannot see what
        failed it: the artifact store behind ``--serve-artifacts``, or a store failing some calls), doubled for each
        such failure in a row up to :data:`MAX_CALL_BACKOFF_S` (diff review 18: a fixed minute left a trial's GPU
        idle about 4 minutes in 5)."""
        if self.http and not probed:
            self.call_failures += 1
            wait = min(MAX_CALL_BACKOFF_S, CALL_BACKOFF_S * 2 ** (self.call_failures - 1))
        else:
            wait = RETRY_AFTER_S
        self.retry_at = time.monotonic() + wait
        if self.down_since is None:
            self.down_since = time.time()
            log.warning("MLflow tracking unreachable (%s): journaling %suntil it answers again", first_line(exc),
                        f"in {journal} " if journal is not None else "")

    def succeeded(self) -> None:
        self.call_failures = 0
        if self.down_since is not None:
            log.warning("MLflow tracking answers again after %.0f s: journal replayed", time.time() - self.down_since)
        self.down_since = None
        self.retry_at = 0.0


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (300 characters at most), else its type's name."""
    return str(exc).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__


#: Entries kept in memory for one journal file the disk would not take; beyond, the oldest metrics go first.
MAX_UNWRITTEN = 1000


class Unwritten:
    """Entries a journal file could not take (``OSError``: a full disk), kept in this process's memory per file and
    appended, in order, before anything newer (:meth:`write`), so that tracking never fails a trial or a sweep
    because the disk is full (they are lost only if the process ends before the disk takes them). At most
    :data:`MAX_UNWRITTEN` per file: beyond that the oldest ``metrics`` entry is dropped (else the oldest entry)."""

    _by_path: ClassVar[dict[Path, list[Entry]]] = {}
    _run_ids: ClassVar[dict[Path, str]] = {}  # the run a new journal's state is to be created with
    _lock: ClassVar[threading.RLock] = threading.RLock()
    _warned: ClassVar[bool] = False
    _dropped: ClassVar[int] = 0

    @classmethod
    def put(cls, journal: Journal, entries: Iterable[Entry]) -> bool:
        """Append ``entries`` to ``journal`` after those it holds already; whether none is left in memory."""
        if journal.path is None:  # a journal in memory takes everything
            for entry in entries:
                journal.append(entry)
            return True
        with cls._lock:
            held = cls._by_path.setdefault(journal.path, [])
            held.extend(entries)
            if journal.run_id is not None:
                cls._run_ids.setdefault(journal.path, journal.run_id)
            cls._bound(held)
            return cls.write(journal)

    @classmethod
    def write(cls, journal: Journal) -> bool:
        """Append what is held for ``journal``, in order, until the disk refuses one; whether none is left."""
        if journal.path is None:
            return True
        with cls._lock:
            held = cls._by_path.get(journal.path, [])
            while held:
                try:
                    journal.append(held[0])
                except OSError as exc:
                    cls._warn(journal, exc)
                    return False
                held.pop(0)
            cls._by_path.pop(journal.path, None)
            cls._run_ids.pop(journal.path, None)
            cls._recovered()
            return True

    @classmethod
    def write_all(cls, folder: Path) -> bool:
        """:meth:`write` what is held for every journal of ``folder``; whether none is left."""
        with cls._lock:
            paths = [path for path in cls._by_path if path.parent == folder]
            return all([cls.write(Journal(path, run_id=cls._run_ids.get(path))) for path in paths])

    @classmethod
    def held(cls, folder: Path) -> dict[Path, list[Entry]]:
        """The entries held for the journals of ``folder``, by journal file."""
        with cls._lock:
            return {path: list(entries) for path, entries in cls._by_path.items() if path.parent == folder and entries}

    @classmethod
    def _bound(cls, held: list[Entry]) -> None:
        while len(held) > MAX_UNWRITTEN:
            index = next((i for i, e in enumerate(held) if e.get("op") == "metrics"), 0)
            del held[index]
            cls._dropped += 1

    @classmethod
    def _warn(cls, journal: Journal, exc: OSError) -> None:
        if not cls._warned:
            cls._warned = True
            log.warning("could not append to %s (%s): keeping its entries in memory (at most %d per journal) until "
                        "the disk takes them", journal, exc, MAX_UNWRITTEN)

    @classmethod
    def _recovered(cls) -> None:
        if cls._warned and not cls._by_path:
            cls._warned = False
            dropped = f" ({cls._dropped} entries over the limit were dropped, oldest metrics first)"
            log.warning("the tracking journals take entries again%s", dropped if cls._dropped else "")
            cls._dropped = 0


class Outbox:
    """A journal delivered by a :class:`Replayer` to the server at ``tracking_uri``: :meth:`put` never raises because
    tracking is unreachable, nor because the disk is full (:class:`Unwritten`)."""

    def __init__(self, journal: Journal, replayer: Replayer, tracking_uri: str) -> None:
        self.journal = journal
        self.tracking_uri = tracking_uri
        self.replayer = replayer

    def put(self, *entries: Entry) -> bool:
        """Append ``entries`` (after any the disk refused before) and try to deliver everything pending; whether
        nothing is pending."""
        written = Unwritten.put(self.journal, [{**e, "time_ms": e.get("time_ms") or now_ms()} for e in entries])
        return self._deliver() and written

    def flush(self) -> bool:
        """Append what the disk refused before, deliver what is pending when the server may answer; whether nothing
        is left."""
        written = Unwritten.write(self.journal)
        return self._deliver() and written

    def _deliver(self) -> bool:
        reach = Reachability.of(self.tracking_uri)
        if not reach.worth_trying():
            return False
        try:
            self.replayer.flush(self.journal)
        except Exception as exc:
            reach.failed(exc, self.journal)
            return False
        reach.succeeded()
        return self.journal.pending() == 0  # an entry MLflow refuses waits (:meth:`Replayer._gives_up`)

    @property
    def run_id(self) -> str | None:
        return self.journal.state().run_id


def now_ms() -> int:
    return int(time.time() * 1000)
