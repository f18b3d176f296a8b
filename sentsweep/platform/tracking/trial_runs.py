"""The MLflow child runs of a sweep's trials, each found again by its ``sentsweep.trial_id`` tag. A trial's
high-water mark is the last step its run holds. Only later reports, and the terminal report once, are
logged: MLflow keeps a second row for a point logged again. After a failed delivery the mark is read back."""

from __future__ import annotations

import contextlib
import json
import posixpath
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs
from mlflow import MlflowClient
from mlflow.entities import Metric, RunTag

from sentsweep.platform.results import (
    FINAL_KEY,
    evaluation_result,
    failure_reason,
    is_draining,
    is_failed,
    is_final,
    trial_end,
)
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.datasets import log_dataset_inputs
from sentsweep.tracking.names import tracked_key
from sentsweep.trainables.restore_note import RESTORE_REASON_KEY, RESTORED_AT_TAG, RESTORED_FROM_KEY, restore_note

#: The metric whose last step is the high-water mark (Tune numbers a trial's reports 1, 2, ...).
MARK_KEY = "training_iteration"
RESULTS_FILE = "result.json"
#: The tags that say whose run it is: a report's record (from a folder anyone may have written) never sets them.
IDENTITY_TAGS = frozenset({vocab.PARENT_TAG, vocab.TRIAL_ID_TAG, vocab.ROLE_TAG, vocab.SWEEP_TAG,
                           vocab.SWEEP_DIR_TAG, vocab.TRIAL_NUMBER_TAG})
#: Result keys that are Tune's bookkeeping, not figures of the trial.
NOT_METRICS = frozenset({"timestamp", "pid", "time_this_iter_s", "done", "iterations_since_restore",
                         "time_since_restore", "timesteps_since_restore", "timesteps_total", "episodes_total"})


@dataclass
class TrialFolder:
    """One trial as its folder holds it: ``fs`` and ``path`` of the trial folder, the trial's id."""

    fs: pyarrow.fs.FileSystem
    path: str
    trial_id: str
    #: where the trial's ``output/`` folder is, when not in ``path`` (a driver's local copy of a remote folder)
    storage: tuple[pyarrow.fs.FileSystem, str] | None = None

    def results(self) -> list[dict[str, Any]]:
        """Every report the folder holds, in order (a line a kill cut short is left out)."""
        text = ""
        with contextlib.suppress(OSError), self.fs.open_input_stream(posixpath.join(self.path, RESULTS_FILE)) as stream:
            text = stream.readall().decode("utf-8", errors="replace")
        found = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                found.append(json.loads(line))
        return [r for r in found if isinstance(r, dict)]

    def output(self) -> tuple[pyarrow.fs.FileSystem, str] | None:
        fs, root = self.storage or (self.fs, self.path)
        path = posixpath.join(root, vocab.OUTPUT_DIR)
        return (fs, path) if fs.get_file_info(path).type == pyarrow.fs.FileType.Directory else None


def trial_folders(fs: pyarrow.fs.FileSystem,
                  experiment_path: str) -> Iterator[tuple[TrialFolder, list[dict[str, Any]]]]:
    """The trials of a Tune experiment folder: each sub-folder with a report naming its trial, and its reports (read
    once: on ``s3://`` each read is a download)."""
    infos = fs.get_file_info(pyarrow.fs.FileSelector(experiment_path, allow_not_found=True))
    for info in sorted(infos, key=lambda i: i.path):
        results = TrialFolder(fs, info.path, "").results() if info.type == pyarrow.fs.FileType.Directory else []
        if results and results[0].get("trial_id"):
            yield TrialFolder(fs, info.path, str(results[0]["trial_id"])), results


@contextlib.contextmanager
def local_folder(fs: pyarrow.fs.FileSystem, path: str) -> Iterator[str]:
    """Folder ``path`` of ``fs`` as a local folder: itself, or a temporary copy."""
    if isinstance(fs, pyarrow.fs.LocalFileSystem):
        yield path
        return
    with tempfile.TemporaryDirectory() as tmp:
        pyarrow.fs.copy_files(path, tmp, source_filesystem=fs, destination_filesystem=pyarrow.fs.LocalFileSystem())
        yield tmp


def pruned_reason(result: dict[str, Any], scheduler_label: str) -> str:
    """Why a trial ended at ``result``, a report that was neither final nor failed: its scheduler stopped it."""
    return (f"pruned by {scheduler_label} at iteration {evaluation_result(result)['training_iteration']} "
            f"(step {int(result.get('step', 0))})")


def ended_reason(result: dict[str, Any] | None, outcome: str, scheduler_label: str) -> str | None:
    """Why a trial whose last report is ``result`` ended ``outcome``: a failed report's reason, its scheduler's
    prune, the budget's stop, or an end before its first report; None for any other outcome."""
    if outcome == "failed":
        return failure_reason(result)
    if outcome == "pruned":
        return pruned_reason(result or {}, scheduler_label)
    return {"stopped": vocab.STOPPED_REASON, "not started": vocab.NOT_STARTED_REASON}.get(outcome)


def result_outcome(result: dict[str, Any] | None, scheduler_label: str | None = None) -> tuple[str, str | None] | None:
    """A trial's outcome (:func:`~sentsweep.platform.results.trial_end`) and reason from its last report: failed,
    finished, and with ``scheduler_label`` pruned or stopped by the budget at a report Tune marked ``done``; else
    None."""
    outcome = trial_end(result)
    if outcome in ("failed", "finished") or (result and result.get("done") and scheduler_label):
        return outcome, ended_reason(result, outcome, scheduler_label or "")
    return None


def create_unique_run(client: MlflowClient, experiment_id: str, tags: dict[str, str], run_name: str,
                      key: dict[str, str]) -> Any:
    """Create a run, keeping only the oldest active run with the ``key`` tags: MLflow's client resends a create
    whose answer a gateway lost, and the twin the server made is deleted here."""
    created = client.create_run(experiment_id, tags=tags, run_name=run_name)
    twins = vocab.tagged_runs(client, experiment_id, key)
    for twin in twins[1:]:
        client.delete_run(twin.info.run_id)
    return twins[0] if twins else created


def wall_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class TrialRuns:
    """The trials' child runs under one parent run, with each trial's mark; a draining report (a checkpoint at a
    stop, no evaluation) is not logged."""

    client: MlflowClient
    experiment_id: str
    parent_run_id: str
    sweep_name: str | None = None
    now_ms: Callable[[], int] = wall_ms
    run_ids: dict[str, str] = field(default_factory=dict)
    marks: dict[str, int] = field(default_factory=dict)
    has_final: dict[str, bool] = field(default_factory=dict)  # whether a run holds the final report (logged once)

    def child_runs(self) -> list[Any]:
        key = {vocab.PARENT_TAG: self.parent_run_id, vocab.ROLE_TAG: vocab.TRIAL_ROLE}
        return vocab.tagged_runs(self.client, self.experiment_id, key)

    def forget(self, trial_id: str) -> None:
        """Read the trial's mark back from MLflow before its next delivery (after a failed one)."""
        self.marks.pop(trial_id, None)

    def run_id(self, trial_id: str, *, new_attempt: bool = False, name: str | None = None,
               number: int | None = None) -> str:
        """The trial's run, found by its tag (its mark read back) or created. ``new_attempt``: Tune started the
        trial again, so an ended run is marked RUNNING and :data:`vocab.ATTEMPT_TAG` counts the attempt."""
        run_id = self.run_ids.get(trial_id)
        if run_id is not None and trial_id in self.marks and not new_attempt:
            return run_id
        run = vocab.find_trial_run(self.client, self.experiment_id, self.parent_run_id, trial_id)
        if run is None:
            key = {vocab.PARENT_TAG: self.parent_run_id, vocab.TRIAL_ID_TAG: trial_id}
            tags = {**key, vocab.ROLE_TAG: vocab.TRIAL_ROLE, vocab.ATTEMPT_TAG: "1",
                    **({vocab.SWEEP_TAG: self.sweep_name} if self.sweep_name else {}),
                    **({vocab.TRIAL_NUMBER_TAG: str(number)} if number is not None else {})}
            run = create_unique_run(self.client, self.experiment_id, tags, name or trial_id, key)
            self.marks[trial_id], self.has_final[trial_id] = -1, False
        else:
            self.marks[trial_id] = max((int(m.step) for key in (tracked_key(MARK_KEY), MARK_KEY)
                                        for m in self.client.get_metric_history(run.info.run_id, key)), default=-1)
            held = run.data.metrics  # a key logged before bookkeeping moved under its prefix counts too
            self.has_final[trial_id] = tracked_key(FINAL_KEY) in held or FINAL_KEY in held
            if name and run.info.run_name != name:  # a run a sync created, named by its id
                self.client.update_run(run.info.run_id, name=name)
                if number is not None:
                    self.client.set_tag(run.info.run_id, vocab.TRIAL_NUMBER_TAG, str(number))
            if new_attempt:
                if run.info.status in vocab.TERMINAL:
                    self.client.update_run(run.info.run_id, status="RUNNING")
                attempt = int(run.data.tags.get(vocab.ATTEMPT_TAG, "1") or 1) + 1
                self.client.set_tag(run.info.run_id, vocab.ATTEMPT_TAG, str(attempt))
        self.run_ids[trial_id] = run.info.run_id
        return run.info.run_id

    def deliver(self, trial_id: str, results: Iterable[dict[str, Any]]) -> int:
        """Log the reports above the trial's mark, in order, then the newest restore note they carry (at any step:
        a fallback resumes below the mark); how many reports (a failure's report carries no figure)."""
        run_id = self.run_ids[trial_id]
        logged = 0
        newest: tuple[str, str, int] | None = None
        for result in results:
            if (note := restore_note(result)) is not None:
                newest = (*note, int(result.get("timestamp") or 0))
            if is_failed(result) or is_draining(result):
                continue
            mark = self.marks.get(trial_id, -1)
            step = int(result["step"]) if isinstance(result.get("step"), int | float) else max(mark, 0)
            final = is_final(result)
            logged_before = step <= mark and not (final and not self.has_final.get(trial_id))
            # a retried attempt's placement, at a step its first attempt logged: where it runs now
            self._log_record(run_id, result.get(vocab.RUN_RECORD_KEY), tags_only=logged_before)
            if logged_before:
                continue
            stamp = self.now_ms()
            # every number but a bool is a point, NaN too (MLflow stores it)
            points = [Metric(tracked_key(k), float(v), stamp, step) for k, v in result.items()
                      if isinstance(v, int | float) and not isinstance(v, bool) and k not in NOT_METRICS]
            points.sort(key=lambda m: m.key == tracked_key(MARK_KEY))  # the mark last: a cut batch is delivered again
            self.client.log_batch(run_id, metrics=points)
            self.marks[trial_id] = max(mark, step)
            self.has_final[trial_id] = final or self.has_final.get(trial_id, False)
            logged += 1
        if newest is not None:
            self.tag_note(run_id, newest)
        return logged

    def tag_note(self, run_id: str, note: tuple[str, str, int]) -> bool:
        """Tag where a trial resumed from, why and when (Unix seconds): a checkpoint fallback or Tune's retry. A run
        holding a newer note keeps it; whether this one was tagged."""
        held = self.client.get_run(run_id).data.tags.get(RESTORED_AT_TAG, "")
        if held.isdigit() and int(held) > note[2]:
            return False
        self.client.log_batch(run_id, tags=[RunTag(RESTORED_FROM_KEY, note[0]), RunTag(RESTORE_REASON_KEY,
                                            note[1][:5000]), RunTag(RESTORED_AT_TAG, str(note[2]))])
        return True

    def _log_record(self, run_id: str, record: Any, *, tags_only: bool = False) -> None:
        if not isinstance(record, dict):
            return
        tags = record.get("tags") if isinstance(record.get("tags"), dict) else {}  # a folder anyone may write
        self.client.log_batch(run_id, tags=[RunTag(str(k), str(v)) for k, v in tags.items()
                                            if str(k) not in IDENTITY_TAGS])
        if tags_only:
            return
        if record.get("params"):
            vocab.log_missing_params(self.client, run_id, record["params"])
        inputs = record.get("inputs")
        if isinstance(inputs, str):  # a trial reports them as JSON text
            inputs = json.loads(inputs)
        if inputs:
            log_dataset_inputs(self.client, run_id, inputs)
        vocab.log_protocols(self.client, run_id, record.get("protocols") or {})

    def log_totals(self, totals: dict[str, float]) -> None:
        """The sweep's totals on the parent run, at step 0."""
        stamp = self.now_ms()
        self.client.log_batch(self.parent_run_id, metrics=[Metric(k, v, stamp, 0) for k, v in totals.items()])

    def end(self, trial_id: str, outcome: str, reason: str | None, *, overwrite: bool = True,
            output: tuple[pyarrow.fs.FileSystem, str] | None = None, params: dict[str, Any] | None = None) -> bool:
        """End the trial's run with the status of its ``outcome`` (:data:`vocab.OUTCOMES`), a finished trial's
        ``output`` uploaded first; an ended run keeps its status unless ``overwrite`` or it ended ``interrupted``,
        which a resume continues. Whether it was ended here. ``params`` go on a run that has none (a trial that
        failed before its first report), ended or not."""
        status, run = vocab.OUTCOMES[outcome], self.client.get_run(self.run_ids[trial_id])
        if params and not run.data.params:
            vocab.log_missing_params(self.client, run.info.run_id, params)
        provisional = run.data.tags.get(vocab.OUTCOME_TAG) == "interrupted" and outcome != "interrupted"
        if run.info.status in vocab.TERMINAL and not (overwrite or provisional):
            return False
        if output is not None and status == "FINISHED":
            with local_folder(*output) as local:
                self.client.log_artifacts(run.info.run_id, local)
        if reason:
            self.client.set_tag(run.info.run_id, vocab.REASON_TAG, reason[:5000])
        elif vocab.REASON_TAG in run.data.tags:  # an earlier end's reason (interrupted) no longer holds
            self.client.delete_tag(run.info.run_id, vocab.REASON_TAG)
        self.client.set_tag(run.info.run_id, vocab.OUTCOME_TAG, outcome)
        self.client.set_tag(run.info.run_id, vocab.NOTE_TAG, f"**{outcome.capitalize()}**"
                            + (f": {reason[:2000]}." if reason else "."))
        self.client.set_terminated(run.info.run_id, status=status)
        return True


@dataclass
class Reconciled:
    trials: int = 0
    reports: int = 0
    ended: int = 0


def reconcile(fs: pyarrow.fs.FileSystem, experiment_path: str, runs: TrialRuns,
              names: Mapping[str, tuple[str, int]] | None = None, scheduler_label: str | None = None,
              done: Reconciled | None = None) -> Reconciled:
    """Make MLflow hold what the experiment folder holds (no trial runs meanwhile); idempotent. A trial ends as
    :func:`result_outcome` reads its last report; any other RUNNING run ends ``interrupted`` (with the sweep).
    ``names``: trial id -> its run's name and number. The counts are added to ``done``."""
    done = done or Reconciled()
    for folder, results in trial_folders(fs, experiment_path):
        done.trials += 1
        runs.forget(folder.trial_id)
        name, number = (names or {}).get(folder.trial_id, (None, None))
        runs.run_id(folder.trial_id, name=name, number=number)
        done.reports += runs.deliver(folder.trial_id, results)
        ended = result_outcome(results[-1] if results else None, scheduler_label)
        if ended is not None and runs.end(folder.trial_id, *ended, overwrite=False, output=folder.output()):
            done.ended += 1
    for run in [r for r in runs.child_runs() if r.info.status == "RUNNING"]:
        trial_id = run.data.tags.get(vocab.TRIAL_ID_TAG, "")
        runs.run_ids[trial_id] = run.info.run_id
        runs.end(trial_id, "interrupted", vocab.INTERRUPTED_REASON)
        done.ended += 1
    return done
