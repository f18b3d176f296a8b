"""The driver's Tune callback that writes every trial's child run (:mod:`.trial_runs`) through a background
:class:`~.run_writes.Deliverer`. At the experiment's end it waits at most :data:`END_WAIT_S`: in an outage the sweep
exits and ``sentsweep sync`` completes the runs from the folder."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.fs
from mlflow import MlflowClient
from ray.tune import Callback

from sentsweep.platform.results import ENDED_OUTCOMES, creation_numbers, is_failed, is_reference, trial_end
from sentsweep.platform.stops import active_stops, superseded
from sentsweep.platform.tracking.reachability import store_answers
from sentsweep.platform.tracking.run_writes import Deliverer
from sentsweep.platform.tracking.trial_runs import RESULTS_FILE, TrialFolder, TrialRuns, ended_reason
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.names import SEARCH_PREFIX, run_name, trial_label
from sentsweep.trainables.restore_note import retry_note

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

log = logging.getLogger("sentsweep.tracking")
#: Trial settings that are not params of its run (how it is tracked, not how it trains).
UNLOGGED_SETTINGS = frozenset({"system_metrics", "system_metrics_interval_s"})
#: Seconds the end of an experiment waits for MLflow (none when its store does not answer a probe at once).
END_WAIT_S = 20.0
#: The outcomes the sweep run's totals count (:func:`total_key`), besides ``trials_total``.
TOTAL_OUTCOMES = (*ENDED_OUTCOMES, "running", "pending")


def total_key(outcome: str) -> str:
    """The sweep run's metric counting the trials of ``outcome``: ``trials_stopped``, ``trials_not_started``."""
    return "trials_" + outcome.replace(" ", "_")


def sweep_totals(trials: Sequence[Any], gpu_per_trial: float) -> dict[str, float]:
    """The sweep run's totals over Tune's trials, or over the trials of its saved state (anything with ``status``
    and ``last_result``): counts by :func:`trial_outcome`, the trials' seconds and GPU-seconds."""
    counts = Counter(trial_outcome(t) for t in trials)
    seconds = sum(float((t.last_result or {}).get("time_total_s", 0.0)) for t in trials)
    return {**{total_key(k): float(counts[k]) for k in TOTAL_OUTCOMES}, "trials_total": float(len(trials)),
            "trial_seconds": seconds, "gpu_seconds": seconds * gpu_per_trial}


def trial_outcome(trial: Trial, ending: bool = False) -> str:
    """How a Tune trial ended (:func:`~sentsweep.platform.results.trial_end`), else ``running`` or ``pending``;
    ``ending``: Tune is completing it (its status not yet updated)."""
    outcome = trial_end(trial.last_result, error=trial.status == "ERROR")
    if ending or trial.status in ("TERMINATED", "ERROR") or outcome in ("finished", "failed"):
        return outcome
    return "running" if trial.status == "RUNNING" else "pending"


def last_error_line(trial: Trial) -> str:
    text = ""
    with contextlib.suppress(OSError):
        text = Path(trial.error_file).read_text(errors="replace") if trial.error_file else ""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("Failure #")]
    errors = [line for line in lines if ("Error" in line or "Exception" in line) and ":" in line]
    return (errors or lines or ["the trial failed (no error recorded)"])[-1][:5000]


def completed_outcome(trial: Trial, scheduler_label: str) -> tuple[str, str | None]:
    """The outcome (:func:`trial_outcome`) and reason of a trial Tune completes."""
    outcome = trial_outcome(trial, ending=True)
    return outcome, _reason(trial, outcome, scheduler_label)


def ended_outcome(trial: Trial, scheduler_label: str) -> tuple[str, str | None]:
    """The outcome and reason of a trial at the experiment's end: a trial Tune ended without a signal ended as
    :func:`trial_outcome` says; any other unfinished one is interrupted with the sweep (a resume continues it)."""
    outcome = trial_outcome(trial)
    if outcome in ("finished", "failed") or (trial.status == "TERMINATED"
                                             and not getattr(active_stops(), "received", False)):
        return outcome, _reason(trial, outcome, scheduler_label)
    return "interrupted", vocab.INTERRUPTED_REASON


def _reason(trial: Trial, outcome: str, scheduler_label: str) -> str | None:
    result = trial.last_result or {}
    if outcome == "failed" and not is_failed(result):  # Tune's error, not a failed report
        return last_error_line(trial)
    return ended_reason(result, outcome, scheduler_label)


def trial_folder(trial: Trial) -> TrialFolder:
    """Where the driver reads a trial's reports: its local copy when it has one, else the sweep folder."""
    storage = (trial.storage.storage_filesystem, trial.storage.trial_fs_path)
    if (local := trial.local_path) and os.path.isfile(os.path.join(local, RESULTS_FILE)):
        return TrialFolder(pyarrow.fs.LocalFileSystem(), local, trial.trial_id, storage=storage)
    return TrialFolder(*storage, trial.trial_id)


@dataclass(eq=False)
class TrialRunsCallback(Callback):
    """Writes each trial's child run under ``settings["parent_run_id"]``; labels start with ``label_prefix``."""

    settings: dict[str, Any]
    scheduler_label: str
    gpu_per_trial: float
    label_prefix: str = SEARCH_PREFIX
    reference: dict[str, Any] | None = None
    reference_setting: str | None = None
    _numbers: dict[str, int] = field(default_factory=dict)  # trial id -> its place in Tune's list, from 1
    _behind: set[str] = field(default_factory=set)  # trials whose last delivery failed or was dropped
    _notes: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # each trial's newest retry note
    _tagged: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # the notes MLflow took

    def __getstate__(self) -> dict[str, Any]:  # Tune pickles callbacks into tuner.pkl
        kept = {k: v for k, v in self.__dict__.items() if k not in ("runs", "deliverer")}
        return {**kept, "_behind": set(), "_numbers": {}, "_tagged": {},
                "_notes": dict(self._notes)}  # a restarted driver tags what waits

    def __setstate__(self, state: dict[str, Any]) -> None:  # an older sweep's callback lacks the newer fields
        self.__dict__.update({"_numbers": {}, "_notes": {}, "_tagged": {}, **state})

    def _number(self, trials: list[Trial], trial: Trial) -> None:
        """Remember the trial's number in the order Tune created the trials, which a resume keeps."""
        if trial.trial_id not in self._numbers and trial in trials:
            self._numbers[trial.trial_id] = creation_numbers(trials)[trial.trial_id]

    def _name(self, trial: Trial) -> tuple[str, int | None]:
        number = self._numbers.get(trial.trial_id)
        values = getattr(trial, "evaluated_params", None) or {}
        return run_name(trial_label(number, self.label_prefix), trial.trial_id, values), number

    @cached_property
    def runs(self) -> TrialRuns:
        return TrialRuns(MlflowClient(tracking_uri=self.settings["tracking_uri"]), self.settings["experiment_id"],
                         self.settings["parent_run_id"], self.settings.get("sweep_name"))

    @cached_property
    def deliverer(self) -> Deliverer:
        return Deliverer(on_failure=self._behind.add)

    def _submit(self, trials: list[Trial], trial: Trial, job: Any) -> None:
        self._number(trials, trial)
        if superseded() is None:  # a driver that lost the sweep leaves its runs to the new holder
            self.deliverer.submit(trial.trial_id, job)

    def catch_up(self, trial: Trial, results: list[dict[str, Any]], new_attempt: bool = False) -> str:
        """The trial's run id, holding the folder's reports first (a trial without a mark this session, a failed
        delivery), then ``results`` (a failure puts the trial in ``_behind`` again, through the deliverer)."""
        runs = self.runs
        if trial.trial_id in self._behind or trial.trial_id not in runs.marks:
            self._behind.discard(trial.trial_id)
            runs.forget(trial.trial_id)
            results = [*trial_folder(trial).results(), *results]
        name, number = self._name(trial)
        run_id = runs.run_id(trial.trial_id, new_attempt=new_attempt, name=name, number=number)
        runs.deliver(trial.trial_id, results)
        # a retry's note waits until MLflow takes it: Tune's thread writes _notes, this one _tagged
        note = self._notes.get(trial.trial_id)
        if note is not None and self._tagged.get(trial.trial_id) != note:
            runs.tag_note(run_id, note)
            self._tagged[trial.trial_id] = note
        return run_id

    def _end(self, trial: Trial, outcome: str, reason: str | None, *, overwrite: bool = True) -> None:
        self.catch_up(trial, [trial.last_result] if trial.last_result else [])
        # params of a trial that failed before its first report: the settings Tune sampled
        sampled = {k: v for k, v in (trial.config or {}).items() if k not in UNLOGGED_SETTINGS}
        self.runs.end(trial.trial_id, outcome, reason, overwrite=overwrite, output=trial_folder(trial).output(),
                      params=None if outcome == "finished" else sampled)

    def _end_if_tracked(self, trial: Trial, outcome: str, reason: str | None, *, overwrite: bool = True) -> None:
        if vocab.find_trial_run(self.runs.client, self.runs.experiment_id, self.runs.parent_run_id, trial.trial_id):
            self._end(trial, outcome, reason, overwrite=overwrite)

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._submit(trials, trial, lambda: self._start(trial))

    def _start(self, trial: Trial) -> None:
        run_id = self.catch_up(trial, [], new_attempt=True)
        if self.reference_setting and is_reference(trial.config, self.reference):
            self.runs.client.set_tag(run_id, vocab.REFERENCE_TAG, self.reference_setting)

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict[str, Any],
                        **info: Any) -> None:
        self._submit(trials, trial, lambda: self.catch_up(trial, [result]))

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        outcome, reason = completed_outcome(trial, self.scheduler_label)
        self._submit(trials, trial, lambda: self._end(trial, outcome, reason))

    def on_trial_recover(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        note = retry_note(getattr(trial.checkpoint, "path", None), last_error_line(trial))
        self._notes[trial.trial_id] = (*note, int(time.time()))
        self._submit(trials, trial, lambda: self.catch_up(trial, []))

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._submit(trials, trial, lambda: self._end(trial, "failed", last_error_line(trial), overwrite=False))

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        if (lost := superseded()) is not None:  # Tune's cleanup after a takeover: this driver's view is stale
            log.warning("the sweep's runs are left as they are (no orphan removal, no trial closed, no totals): %s",
                        lost)
            return
        if not trials:
            return
        deliverer, runs = self.deliverer, self.runs
        deliverer.submit("orphans", lambda: self.remove_orphans({t.trial_id for t in trials}), force=True)
        for trial in trials:
            self._number(trials, trial)
            outcome, reason = ended_outcome(trial, self.scheduler_label)  # only a run still RUNNING is ended
            # a PENDING trial not started this session: only a run an earlier session made (none is created)
            end = self._end_if_tracked if trial.status == "PENDING" and trial.trial_id not in runs.run_ids \
                else self._end
            deliverer.submit(trial.trial_id, partial(end, trial, outcome, reason, overwrite=False), force=True)
        totals = sweep_totals(trials, self.gpu_per_trial)
        deliverer.submit("totals", lambda: runs.log_totals(totals), force=True)
        wait = END_WAIT_S if store_answers(self.settings["tracking_uri"]) else 0.0
        if not deliverer.drain(wait) or self._behind:
            log.warning("MLflow has not got all of the trials' runs; `sentsweep sync SWEEP_DIR` completes them "
                        "from the sweep folder (a resume does too)")

    def remove_orphans(self, trial_ids: set[str]) -> None:
        """Close and delete the runs of trials the sweep no longer has: a trial created after Tune's last
        snapshot is lost with the driver, and its run would be a duplicate left RUNNING."""
        client, parent = self.runs.client, self.runs.parent_run_id
        orphans = [r for r in self.runs.child_runs() if r.data.tags.get(vocab.TRIAL_ID_TAG) not in trial_ids]
        for run in orphans:
            client.set_tag(run.info.run_id, vocab.REASON_TAG, "lost with the driver before Tune saved its trial; "
                           "rerun as a new trial")
            if run.info.status != "KILLED":
                client.set_terminated(run.info.run_id, status="KILLED")
            client.delete_run(run.info.run_id)
        if orphans:
            client.set_tag(parent, "sentsweep.deleted_orphan_runs", ",".join(r.info.run_id for r in orphans))
