"""Resuming a sweep: the config it was started with, a restored search that agrees with its trials (Tune restores the
number of samples with its search generator, ray-project/ray#33495), and the interrupted sweep of a config."""

from __future__ import annotations

import fnmatch
import json
import logging
import posixpath
import re
from collections.abc import Collection
from typing import Any, NamedTuple

import pyarrow.fs
from mlflow import MlflowClient
from ray.tune import Tuner
from ray.tune.search import ConcurrencyLimiter, Searcher, SearchGenerator
from ray.tune.utils import flatten_dict

from sentsweep._compat.ray import restored_tune_config
from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform.config import BudgetConfig, SweepConfig
from sentsweep.platform.folder.trust import same_folder
from sentsweep.platform.location import SweepLocation, SweepManifest, is_shared_folder, locate, sweep_owner
from sentsweep.platform.search.scheduler import recall
from sentsweep.platform.search.searcher import PruningAwareOptunaSearch
from sentsweep.platform.tracking.parent_run import SweepRun, flatten
from sentsweep.platform.tracking.trial_runs import trial_folders
from sentsweep.tracking.vocabulary import RESUME_CHANGES_TAG, STATUS_TAG, SWEEP_DIR_TAG, run_or_none
from sentsweep.trainables.checkpoints import StoredFolder

logger = logging.getLogger(__name__)

#: Fields a resume may change when ``--allow-change`` names them (a section stands for its fields, which may also be
#: named alone: ``budget.gpu_hours``): Tune reads these afresh, or they are the driver's own.
CHANGEABLE: frozenset[str] = frozenset({"time_budget_s", "num_samples", "budget", "stop_grace_s", "notify"})
#: Fields users expect to change but Ray Tune keeps from the saved experiment, with the reason.
FIXED_ON_RESUME: dict[str, str] = {
    "max_concurrent_trials": "Ray Tune restores the concurrency limiter from the searcher's saved state",
}
#: The statuses of trials that will not run again (Tune resumes errored trials, but tells no searcher of them again).
ENDED = frozenset({"TERMINATED", "ERROR"})
#: The parent run's states (its status tag) of a sweep to continue.
RESUMABLE: frozenset[str] = frozenset({"interrupted", "crashed"})


def is_changeable(name: str, allowed: Collection[str] = CHANGEABLE) -> bool:
    return name in allowed or name.split(".", 1)[0] in allowed


def config_changes(stored: dict[str, Any], given: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{field: (stored value, given value)}`` for every dotted field that differs."""
    old, new = flatten(stored), flatten(given)
    return {key: (old.get(key), new.get(key)) for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)}


def refuse_unchangeable(allow: Collection[str], source: str | None = None) -> None:
    """:class:`ConfigError` naming each ``--allow-change`` field that a resume cannot change."""
    if unknown := [name for name in allow if not is_changeable(name)]:
        reasons = "; ".join(f"{name}: {FIXED_ON_RESUME.get(name, 'only ' + ', '.join(sorted(CHANGEABLE)) + ' can')}"
                            for name in unknown)
        raise ConfigError(f"cannot change on resume: {reasons}", field="--allow-change", file=source)


def resume_config(stored: SweepConfig, given: SweepConfig | None, allow: Collection[str] = (),
                  source: str | None = None) -> SweepConfig:
    """The config to resume with: ``stored``, with the ``allow``-ed :data:`CHANGEABLE` fields of ``given``; a
    :class:`ConfigError` naming every field that differs otherwise, or that ``allow`` names and cannot change."""
    refuse_unchangeable(allow, source)
    if given is None:
        return stored
    changes = config_changes(stored.model_dump(mode="json"), given.model_dump(mode="json"))
    if refused := {key: change for key, change in changes.items() if not is_changeable(key, allow)}:
        fixed = [key for key in refused if key in FIXED_ON_RESUME]
        allowable = [key for key in refused if is_changeable(key)]
        hint = (f"; {fixed[0]}: {FIXED_ON_RESUME[fixed[0]]}" if fixed else
                f"; {', '.join(allowable)} can change with --allow-change {','.join(allowable)}" if allowable else "")
        described = ", ".join(f"{key} ({old!r} -> {new!r})" for key, (old, new) in refused.items())
        raise ConfigError(f"the config differs from the one the sweep was started with: {described}; "
                          f"run it unchanged, or start a new sweep{hint}", file=source)
    fields = {key.split(".", 1)[0] for key in changes}  # every differing field of a section is allowed
    return stored.model_copy(update={name: getattr(given, name) for name in fields})


def apply_resume_config(tuner: Tuner, location: SweepLocation, manifest: SweepManifest, config: SweepConfig,
                        sweep: SweepRun) -> None:
    """After ``Tuner.restore``: give ``tuner`` the time budget and number of samples of ``config`` and its ASHA the
    reports its rungs held, and record an allowed change in the manifest and on the parent run."""
    tune_config = restored_tune_config(tuner)
    if tune_config is None or not hasattr(tune_config, "time_budget_s"):
        raise ConfigError("this Ray Tune version does not let a resume change the time budget", field="time_budget_s")
    tune_config.time_budget_s = config.time_budget_s  # read afresh on every fit
    storage = location.resolve()
    recall(tune_config.scheduler, {t.trial_id: results for t, results in trial_folders(*storage)})
    searcher = tune_config.search_alg  # the searcher inside Tune's wrappers, chained again as ``tune.run`` would
    while not isinstance(searcher, Searcher) or isinstance(searcher, ConcurrencyLimiter):
        searcher = searcher.searcher
    # no experiment state to restore: Tune starts afresh, and the trials Optuna had asked are lost
    if isinstance(searcher, PruningAwareOptunaSearch) and snapshot_trials(*storage) is None and \
            (lost := searcher.forget_lost(set())):
        logger.warning("%d Optuna trial(s) asked before Tune's first snapshot were told FAIL", lost)
    if tune_config.max_concurrent_trials:
        searcher = ConcurrencyLimiter(searcher, max_concurrent=tune_config.max_concurrent_trials)
    reopen = BudgetConfig.model_validate(manifest.config.get("budget") or {}) != config.budget
    tune_config.search_alg = ResizableSearchGenerator(searcher, config.num_samples, reopen, storage)
    tune_config.max_concurrent_trials = None  # so that ``tune.run`` does not wrap the searcher again
    if changes := config_changes(manifest.config, config.model_dump(mode="json")):
        location.write_manifest(manifest.model_copy(update={"config": config.model_dump(mode="json")}), config)
        sweep.set_tags({RESUME_CHANGES_TAG: json.dumps({key: list(change) for key, change in changes.items()})})


class SnapshotTrial(NamedTuple):
    """What a resume restores of one trial (and what a sync names its run by)."""

    trial_id: str
    status: str
    last_result: dict[str, Any]
    experiment_tag: str = ""
    evaluated_params: dict[str, Any] = {}  # noqa: RUF012 - a NamedTuple default, never changed


def snapshot_names(filesystem: pyarrow.fs.FileSystem, folder: str) -> list[str]:
    """The names of Tune's experiment snapshots in ``folder``, oldest first (their names carry the time)."""
    infos = filesystem.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True))
    return sorted(fnmatch.filter([posixpath.basename(i.path) for i in infos], "experiment_state-*.json"))


def snapshot_trials(filesystem: pyarrow.fs.FileSystem, folder: str) -> list[SnapshotTrial] | None:
    """The trials of the newest experiment snapshot in ``folder`` (plain JSON, nothing unpickled); None: none."""
    if not (names := snapshot_names(filesystem, folder)):
        return None
    with filesystem.open_input_stream(posixpath.join(folder, max(names))) as stream:
        state = json.loads(stream.readall().decode("utf-8"))
    loaded = [(json.loads(trial), json.loads(metadata)) for trial, metadata in state.get("trial_data", [])]
    return [SnapshotTrial(str(trial["trial_id"]), str(trial["status"]), dict(metadata.get("last_result") or {}),
                          str(trial.get("experiment_tag") or ""),
                          p if isinstance(p := trial.get("evaluated_params"), dict) else {})
            for trial, metadata in loaded]


class ResizableSearchGenerator(SearchGenerator):
    """Tune's :class:`SearchGenerator` whose restored total is ``num_samples``, and whose restored search agrees with
    the trials restored from ``storage`` (the sweep folder's file system and path). A larger total, or ``reopen``
    (the budget changed), clears a saved "finished" flag, so that new trials are created."""

    def __init__(self, searcher: Searcher, num_samples: int, reopen: bool,
                 storage: tuple[pyarrow.fs.FileSystem, str]) -> None:
        super().__init__(searcher)
        self.num_samples, self.reopen, self.storage = num_samples, reopen, storage
        self.restored: list[SnapshotTrial] | None = None

    def add_configurations(self, experiments: Any) -> None:
        """Tune's registration, with ``num_samples`` as the total: a restored experiment's spec may not carry it,
        and a restore that finds no snapshot sets no state (Tune starts the search afresh)."""
        super().add_configurations(experiments)
        SearchGenerator.set_state(self, {**self.get_state(), "total_samples": self.num_samples})

    def set_state(self, state: dict[str, Any]) -> None:
        saved, counter = int(state["total_samples"]), int(state["counter"])
        state = {**state, "total_samples": self.num_samples}
        if self.restored is not None and counter != len(self.restored):
            logger.warning("the sweep's saved search counted %d trials, its saved trials are %d (a driver lost while "
                           "Tune saved them): it continues from the trials", counter, len(self.restored))
            state["counter"] = len(self.restored)
        if self.num_samples > saved or self.reopen or state["counter"] < min(counter, self.num_samples):
            state["finished"] = False  # more to create: new samples, a lifted stop, or trials a torn save lost
        super().set_state(state)

    def restore_from_dir(self, dirpath: str) -> None:
        """Tune's restore, made to agree with the trials of the newest experiment state in the sweep's storage (an
        earlier driver's staging folder on this host may hold files it never uploaded): the limiter's running trials
        are those not ended; Optuna is told the end of an ended trial it was not told, and FAIL for one Tune lost."""
        trials = self.restored = snapshot_trials(*self.storage)
        super().restore_from_dir(dirpath)
        if trials is None:
            return
        search = self.searcher
        running = {t.trial_id for t in trials if t.status not in ENDED}
        while not isinstance(search, PruningAwareOptunaSearch) and hasattr(search, "searcher"):
            if isinstance(search, ConcurrencyLimiter) and search.live_trials != running:
                search.live_trials = set(running)
                search.num_unfinished_live_trials = len(running)
            search = search.searcher
        if not isinstance(search, PruningAwareOptunaSearch):
            return
        untold = search.running()
        for trial in trials:
            if trial.status in ENDED and trial.trial_id in untold:
                search.on_trial_complete(trial.trial_id, flatten_dict(trial.last_result) or None,
                                         error=trial.status == "ERROR")
        if lost := search.forget_lost({t.trial_id for t in trials}):
            logger.warning("%d Optuna trial(s) whose Tune trial the driver lost before saving it were told FAIL", lost)


def refuse_unreadable_state(location: SweepLocation) -> None:
    """A :class:`ConfigError` naming the newest experiment snapshot of ``location`` when it does not parse (a kill
    or a full disk cut it short): Tune would log the error and run the experiment again from its start."""
    if not (names := snapshot_names(*location.resolve())):
        return
    try:
        state = json.loads(location.read_optional(names[-1]) or b"")
        if not isinstance(state, dict) or not isinstance(state.get("trial_data"), list):
            raise ValueError("not Ray Tune's experiment state")
    except ValueError as exc:
        remedy = (f"move it out of the folder to use the snapshot before it ({names[-2]})" if len(names) > 1
                  else "it is the sweep's only snapshot, so the sweep cannot be resumed: start it anew")
        raise ConfigError(f"Ray Tune's experiment snapshot does not parse ({' '.join(str(exc).split())[:200]}; a "
                          f"kill or a full disk cut it short); nothing was changed: {remedy}",
                          file=location.file_uri(names[-1])) from None


def refuse_fewer_samples(location: SweepLocation, stored: SweepConfig, config: SweepConfig) -> None:
    if config.num_samples >= stored.num_samples:
        return
    try:
        trials = snapshot_trials(*location.resolve()) or []
    except (OSError, ValueError, KeyError):  # no readable experiment state: Tuner.restore will say so
        trials = []
    if config.num_samples < len(trials):
        ended = sum(t.status in ENDED for t in trials)
        raise ConfigError(f"cannot lower num_samples to {config.num_samples}: the sweep already started "
                          f"{len(trials)} trials ({ended} of them ended) and a resume continues every started trial; "
                          f"use num_samples >= {len(trials)}", field="num_samples", file=location.uri)


def is_resumable(run_status: str, tags: dict[str, str]) -> bool:
    """Whether a parent run is a sweep to continue; one RUNNING is, and its lock decides whether now."""
    if run_status == "RUNNING":
        return True
    state = tags.get(STATUS_TAG)
    return run_status == "KILLED" if state is None else state in RESUMABLE


class PreviousSweep(NamedTuple):
    """The newest sweep folder of a config's identity, and how its MLflow parent run ended."""

    uri: str
    status: str
    tags: dict[str, str]


def sweep_folders(config: SweepConfig) -> list[str]:
    """The sweep folders of ``config`` (its name, under its storage_path), oldest first by their stamp."""
    probe = locate(f"{config.storage_path.rstrip('/')}/probe", config.storage_endpoint_url)
    fs, path = probe.resolve()
    pattern = re.compile("^" + re.escape(config.name) + r"-\d{8}-\d{6}(-[0-9a-f]+)?$")  # the folder's stamp
    names = StoredFolder(fs, posixpath.dirname(path)).subfolders()
    return [f"{probe.uri.rsplit('/', 1)[0]}/{name}" for name in names if pattern.match(name)]


def previous_sweep(config: SweepConfig, owner: str | None = None) -> PreviousSweep | None:
    """The newest sweep folder of a resolved ``config``'s identity (``owner``: default :func:`sweep_owner`). A
    manifest naming another tracking server is skipped before it is contacted (it would get this process's
    credentials), and a shared folder whose parent run is another folder's is passed over."""
    owner = owner or sweep_owner()
    found: list[tuple[float, str, SweepManifest]] = []
    for uri in sweep_folders(config):
        try:
            manifest = locate(uri, config.storage_endpoint_url).read_manifest()
        except ConfigError:  # no manifest, or not a sweep's: not a sentsweep sweep (or not yet one)
            continue
        except StorageError as exc:
            raise StorageError(f"{exc.message}; --resume-interrupted cannot tell whether this folder is the sweep to "
                               "continue, so it starts none", file=exc.file) from exc
        if manifest.owner != owner or manifest.config.get("name") != config.name:  # another identity's
            continue
        if manifest.tracking_uri != config.tracking.uri:  # never contacted: a planted manifest would get the login
            logger.warning("%s is not resumed: its manifest names the tracking server %s, not this config's %s",
                           uri, manifest.tracking_uri, config.tracking.uri)
            continue
        found.append((manifest.created, uri, manifest))
    # newest first by the manifest's own time; a shared folder whose run is another folder's is passed over for the
    # next (a manifest planted with a later time would otherwise hide the sweep to resume)
    for _, uri, manifest in sorted(found, key=lambda item: item[0], reverse=True):
        run = run_or_none(MlflowClient(tracking_uri=manifest.tracking_uri), manifest.parent_run_id)
        if run is None:
            return PreviousSweep(uri, "FINISHED", {})  # the run was deleted: nothing to reattach to, start anew
        previous = PreviousSweep(uri, run.info.status, dict(run.data.tags))
        if is_shared_folder(uri) and previous.tags and not same_folder(previous.tags.get(SWEEP_DIR_TAG), uri):
            logger.warning("%s is not resumed: its manifest names the sweep run of %s (a folder moved, or copied "
                           "there)", uri, previous.tags.get(SWEEP_DIR_TAG) or "no sweep folder")  # resume refuses it
            continue
        return previous
    return None


def interrupted_sweep(config: SweepConfig, owner: str | None = None) -> str | None:
    """The folder ``--resume-interrupted`` continues; None when the newest sweep of the identity is not to resume."""
    previous = previous_sweep(config, owner)
    return previous.uri if previous is not None and is_resumable(previous.status, previous.tags) else None
