"""A sweep's compute budget (``budget: {gpu_hours, wall_hours}``), counted across resumes and never over downtime.

Ray Tune's ``time_budget_s`` is wall time since ``fit`` began, and a resumed experiment counts the hours it lay
dead. Here the count is the trials' own: every report of a trial carries when its attempt began and how long it
has run (:data:`~sentsweep.trainables.method.ATTEMPT_SECONDS_KEY`, with the GPUs it holds), and the driver's
:class:`BudgetCallback` adds what each report adds to the last one it counted of that attempt:

- ``compute_seconds``, what ``gpu_hours`` limits: seconds x GPUs held for a trial holding GPUs (a quarter GPU
  counts a quarter), wall seconds for a CPU-only trial (so the same budget works for a CPU sweep);
- ``gpu_seconds`` (GPUs only) and ``trial_seconds`` (wall, every trial), reported beside it;
- ``wall_seconds``, what ``wall_hours`` limits: the driver's time while the sweep ran, session by session.

The count lives in the sweep folder (:data:`BUDGET_FILE`, written on each counted report), so a resumed sweep
continues it: a killed attempt's time up to its last report is counted once (the attempt after a resume is a new
attempt, counted from its own start), and what ran after that report is not counted at all. Reports a trial
replays without training (:func:`sentsweep.platform.trial.run_once`) count nothing.

Once a limit is spent no new trial starts: :class:`BudgetGate` (around the searcher) tells Tune the search is
finished, a trial Tune had already queued ends at its start without training (:func:`skip_when_spent`), and the
running trials finish. The parent run gets the counts (``budget_*`` metrics) and, when the budget stopped it,
the tag ``sentsweep.stop_reason``. The confirmation stage (:mod:`.confirmation`) is counted too, and runs its
fixed ``top_k x seeds`` trials whether or not the search spent the budget.

A resume may change the budget (``--allow-change budget``: :mod:`.resume_config`): :meth:`BudgetMeter.load` continues
the count against the new limits, and lifts a stored stop they no longer cover (:attr:`BudgetMeter.lifted`), so that
the trials it had stopped start; ``on_spent`` is told once when the budget becomes spent (:mod:`.notify`).

The storage may fail (an S3 outage, a full disk). Reading the count, only a missing :data:`BUDGET_FILE` is a new
sweep's zero count: another error is tried again and then stops the sweep with a
:class:`~sentsweep.errors.StorageError` naming the file (:meth:`SweepLocation.read_optional
<sentsweep.platform.storage.SweepLocation.read_optional>`), so a spent budget is never written over with zeros.
Saving it from Tune's callbacks, an ``OSError`` is logged once and the count stays in memory, saved again at the
next tick (:class:`BudgetCallback`): the sweep goes on rather than lose Tune's final snapshot. A trial's worker
reading whether the budget is spent (:func:`spent_in_folder`) tries again too, then counts the budget as not
spent: the driver's :class:`BudgetGate` stays the authority (it starts no new trial once spent), so what a
persistent outage can add is the trials Tune had already queued, and a worker that cannot read the sweep folder
cannot save its checkpoints there either.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import posixpath
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ray.tune import Callback
from ray.tune.search import Searcher

from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform.config import BudgetConfig
from sentsweep.platform.interrupt import superseded
from sentsweep.platform.storage import read_or_none
from sentsweep.trainables.method import ATTEMPT_SECONDS_KEY, ATTEMPT_STARTED_KEY, GPUS_KEY

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

    from sentsweep.platform.storage import SweepLocation

log = logging.getLogger(__name__)

#: The count's file in the sweep folder.
BUDGET_FILE = "budget.json"
#: The key of the report of a trial that ended at its start because the budget was spent.
SKIPPED_KEY = "skipped_by_budget"
#: The parent run's tag saying why the sweep stopped starting trials.
STOP_REASON_TAG = "sentsweep.stop_reason"
#: The reason of a trial run that never started.
SKIPPED_REASON = "not started: the sweep's budget was spent"


@dataclass
class BudgetCount:
    """The counts of :data:`BUDGET_FILE`, and the last report counted of each trial's current attempt."""

    compute_seconds: float = 0.0
    gpu_seconds: float = 0.0
    trial_seconds: float = 0.0
    wall_seconds: float = 0.0
    sessions: int = 0
    spent: str | None = None  # why no trial starts any more (None: the budget is not spent)
    attempts: dict[str, list[float]] = field(default_factory=dict)  # trial id -> [attempt started, seconds]


class BudgetMeter:
    """The budget of one sweep in the driver: counts reports and ticks, says whether it is spent, saves itself."""

    def __init__(self, budget: BudgetConfig, location: SweepLocation | None = None,
                 count: BudgetCount | None = None, tick_save_s: float = 10.0,
                 on_spent: Callable[[str], None] | None = None, retry_save_s: float = 1.0) -> None:
        self.budget = budget
        self.location = location
        self.count = count or BudgetCount()
        self.tick_save_s = tick_save_s  # a tick saves the count this often
        self.retry_save_s = retry_save_s  # and this often while the last save failed (:attr:`unsaved`)
        self.on_spent = on_spent  # called once, with the reason, when the budget becomes spent
        self.lifted: str | None = None  # the stop reason a budget changed on resume lifted (see load)
        self._last_tick: float | None = None
        self._last_save = 0.0
        self.unsaved: OSError | None = None  # why the last save failed (None: the folder holds the count)

    @classmethod
    def load(cls, budget: BudgetConfig, location: SweepLocation,
             on_spent: Callable[[str], None] | None = None) -> BudgetMeter:
        """The sweep's meter, continuing the count its folder holds (a fresh one for a new sweep).

        ``budget`` is the sweep's budget now: a resume may change it (``--allow-change budget``). A count stored as
        spent that the new limits no longer cover is lifted (:attr:`lifted`; saved at once, so that the trials
        that read the folder, :func:`skip_when_spent`, start again); a lowered budget is spent at the first check.
        """
        raw = location.read_optional(BUDGET_FILE)  # a storage error: StorageError, never a fresh count
        if raw is None:
            return cls(budget, location, on_spent=on_spent)
        try:
            meter = cls(budget, location, BudgetCount(**json.loads(raw)), on_spent=on_spent)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"unreadable budget count ({exc}); it holds the compute the sweep has used",
                              file=f"{location.uri}/{BUDGET_FILE}") from None
        if meter.count.spent is not None and meter.exceeded() is None:
            meter.lifted, meter.count.spent = meter.count.spent, None
            meter.save()
        return meter

    # -- counting ------------------------------------------------------------------------------------
    def add_report(self, trial_id: str, result: dict[str, Any]) -> float:
        """Count what one report of a trial adds (its attempt's seconds since the last counted report); returns
        the compute seconds added."""
        started, seconds = result.get(ATTEMPT_STARTED_KEY), result.get(ATTEMPT_SECONDS_KEY)
        if not _number(started) or not _number(seconds) or result.get("restored_from_mlflow"):
            return 0.0
        last = self.count.attempts.get(trial_id)
        counted = last[1] if last and last[0] == started else 0.0
        delta = max(0.0, float(seconds) - counted)
        self.count.attempts[trial_id] = [float(started), max(float(seconds), counted)]
        if delta <= 0.0:
            return 0.0
        gpus = float(result.get(GPUS_KEY) or 0.0)
        compute = delta * gpus if gpus > 0 else delta
        self.count.trial_seconds += delta
        self.count.gpu_seconds += delta * gpus
        self.count.compute_seconds += compute
        self._check()
        self.save()
        return compute

    def tick(self) -> None:
        """Count the driver's time since the last tick of this session (the first tick only starts the clock)."""
        now = time.monotonic()
        if self._last_tick is not None:
            self.count.wall_seconds += now - self._last_tick
        self._last_tick = now
        self._check()
        every = self.tick_save_s if self.unsaved is None else self.retry_save_s
        if now - self._last_save >= every:
            self.save()

    def start_session(self) -> None:
        self.count.sessions += 1
        self._last_tick = None
        self.tick()

    def exceeded(self) -> str | None:
        """Why the budget is spent by the count (None while it is not): the first limit reached."""
        limits = (("gpu_hours", self.budget.gpu_hours, self.count.compute_seconds),
                  ("wall_hours", self.budget.wall_hours, self.count.wall_seconds))
        for name, hours, used in limits:
            if hours is not None and used >= hours * 3600:
                return (f"budget: {name} {hours:g} spent ({used / 3600:.4g} h counted); no new trial started, the "
                        "running ones finished")
        return None

    def _check(self) -> None:
        if self.count.spent is not None:
            return
        reason = self.exceeded()
        if reason is not None:
            self.count.spent = reason
            try:
                self.save()
            finally:  # told even when the storage failed: the count in memory is spent
                if self.on_spent is not None:
                    self.on_spent(reason)

    def spent(self) -> bool:
        return self.count.spent is not None

    def figures(self) -> dict[str, float]:
        """The parent run's ``budget_*`` metrics."""
        c = self.count
        return {"budget_compute_seconds": c.compute_seconds, "budget_gpu_seconds": c.gpu_seconds,
                "budget_trial_seconds": c.trial_seconds, "budget_wall_seconds": c.wall_seconds}

    def save(self) -> None:
        """Write the count to the sweep folder (whole or not at all: :meth:`SweepLocation.write_text
        <sentsweep.platform.storage.SweepLocation.write_text>`); an ``OSError`` is raised, and remembered in
        :attr:`unsaved` so that the next tick saves again."""
        self._last_save = time.monotonic()
        if self.location is None:
            return
        try:
            self.location.write_text(BUDGET_FILE, json.dumps(asdict(self.count), indent=1))
        except OSError as exc:
            self.unsaved = exc
            raise
        if self.unsaved is not None:
            log.warning("the budget count is saved to %s again", self.location.file_uri(BUDGET_FILE))
        self.unsaved = None

    def save_later(self, action: Callable[[], Any]) -> None:
        """``action()`` (a count that saves); an ``OSError`` of its save is logged (once until a save succeeds) and
        the count, kept in memory, is saved at the next tick: a storage outage does not stop the sweep."""
        failing = self.unsaved is not None
        try:
            action()
        except OSError as exc:
            self.unsaved = exc
            if not failing and self.location is not None:
                log.warning("could not save the budget count to %s (%s); counting on, saving again at the next "
                            "tick", self.location.file_uri(BUDGET_FILE), exc)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


#: The meter of the sweep this process drives (set inside :func:`metering`).
_ACTIVE: list[BudgetMeter] = []


def active_meter() -> BudgetMeter | None:
    """The meter of the innermost :func:`metering` block, if any."""
    return _ACTIVE[-1] if _ACTIVE else None


@contextlib.contextmanager
def metering(meter: BudgetMeter) -> Iterator[BudgetMeter]:
    """Make ``meter`` the one :class:`BudgetCallback` and :class:`BudgetGate` use (pickled into a sweep's
    ``tuner.pkl``, they find the current driver's meter here, also after a restore); saved at the end, unless the
    driver lost its lease (:func:`~sentsweep.platform.interrupt.superseded`): the count in the folder is the new
    holder's then, and this one's is stale."""
    _ACTIVE.append(meter)
    meter.start_session()
    try:
        yield meter
    finally:
        try:
            _final_save(meter)
        finally:
            _ACTIVE.remove(meter)


def _final_save(meter: BudgetMeter) -> None:
    """The session's last count, unless the lease was lost (the folder's count is the new holder's then); a storage
    error here is the sweep's (the tail would be lost)."""
    lost = superseded()
    if lost is not None:
        log.warning("the budget count is not saved (%s holds the new holder's): %s", BUDGET_FILE, lost)
        return
    meter.save_later(meter.tick)
    meter.save()


class BudgetCallback(Callback):
    """Counts every trial report and the driver's time into the active meter (no meter, or a lost lease: does
    nothing; each count is saved, and the folder's count is the new holder's then).

    A save that fails (``OSError``: the storage is down, the disk full) does not leave Tune's step (which would end
    the sweep without Tune's final snapshot): :meth:`BudgetMeter.save_later`."""

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        meter = _counting_meter()
        if meter is not None:
            meter.save_later(meter.tick)

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        meter = _counting_meter()
        if meter is not None:
            meter.save_later(lambda: meter.add_report(trial.trial_id, result))

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        meter = _counting_meter()
        if meter is not None and trial.last_result:
            meter.save_later(lambda: meter.add_report(trial.trial_id, trial.last_result))


def _counting_meter() -> BudgetMeter | None:
    """The active meter, unless the driver lost its lease."""
    return active_meter() if superseded() is None else None


class BudgetGate(Searcher):
    """A searcher that says the search is finished once the active meter's budget is spent, and otherwise is
    the searcher it wraps (Tune saves and restores the wrapped one: ``.searcher``)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        super().__init__(metric=searcher.metric, mode=searcher.mode)

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        return self.searcher.set_search_properties(metric, mode, config, **spec)

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        return self.searcher.set_max_concurrency(max_concurrent)

    def suggest(self, trial_id: str) -> dict | None:
        meter = active_meter()
        if meter is not None and meter.spent():
            return Searcher.FINISHED
        return self.searcher.suggest(trial_id)

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        self.searcher.on_trial_result(trial_id, result)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        self.searcher.on_trial_complete(trial_id, result=result, error=error)

    def add_evaluated_point(self, *args: Any, **kwargs: Any) -> None:
        self.searcher.add_evaluated_point(*args, **kwargs)

    def on_pause(self, trial_id: str) -> None:
        self.searcher.on_pause(trial_id)

    def on_unpause(self, trial_id: str) -> None:
        self.searcher.on_unpause(trial_id)

    def get_state(self) -> dict:
        return {}

    def set_state(self, state: dict) -> None:
        return None

    def save(self, checkpoint_path: str) -> None:
        self.searcher.save(checkpoint_path)

    def restore(self, checkpoint_path: str) -> None:
        self.searcher.restore(checkpoint_path)


def spent_in_folder() -> bool:
    """In a trial's worker: whether the count in its sweep folder says the budget is spent."""
    from ray import tune

    storage = tune.get_context().get_storage()
    return spent_at(storage.storage_filesystem, posixpath.join(storage.experiment_fs_path, BUDGET_FILE))


def spent_at(filesystem: Any, path: str) -> bool:
    """Whether the count at ``path`` on ``filesystem`` says the budget is spent; no count: not spent. A storage
    that fails is tried again; when it keeps failing (or the count is unreadable), not spent, with a warning: the
    driver's :class:`BudgetGate` decides which trials start (see the module docstring)."""

    def read() -> bytes:
        with filesystem.open_input_stream(path) as stream:
            return stream.readall()

    try:
        raw = read_or_none(read, path)
        return raw is not None and json.loads(raw).get("spent") is not None
    except (StorageError, ValueError, AttributeError) as exc:
        log.warning("could not read the budget count %s (%s); this trial starts", path, exc)
        return False


def skip_when_spent(function: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``function`` as a Tune trainable that ends at once, reporting :data:`SKIPPED_KEY`, when it would start a
    new trial after the budget was spent (a trial restored from a checkpoint continues: it was running)."""

    @functools.wraps(function)
    def trainable(config: dict[str, Any]) -> None:
        from ray import tune

        if tune.get_checkpoint() is None and spent_in_folder():
            tune.report({SKIPPED_KEY: 1.0, str(config.get("metric", "")) or "skipped": math.nan, "done": True})
            return
        function(config)

    return trainable


def record_budget(meter: BudgetMeter, log_metrics: Callable[[dict[str, float]], None],
                  set_tags: Callable[[dict[str, str]], None], echo: Callable[[str], None] = print) -> None:
    """The counts on the parent run, and why the sweep stopped when its budget stopped it."""
    log_metrics(meter.figures())
    if meter.count.spent:
        set_tags({STOP_REASON_TAG: meter.count.spent})
        echo(meter.count.spent)
    elif meter.lifted:  # an earlier session's reason no longer holds
        set_tags({STOP_REASON_TAG: f"none: the budget changed on resume lifted the earlier stop ({meter.lifted})"})
