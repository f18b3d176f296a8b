"""Resuming the search: the number of trials (``resume DIR --set num_samples=N --allow-change num_samples``), and a
search that agrees with the trials Tune restores.

Ray Tune 2.60 cannot change the number of trials on a resume (``Tuner.restore`` continues the experiment as
specified; ray-project/ray#33495): it restores ``SearchGenerator(ConcurrencyLimiter(searcher))`` from the sweep
folder's ``search_gen_state-*.json``, total number of samples included. :func:`resize_search` hands the restored
Tuner a :class:`ResizableSearchGenerator` (the chain Tune would build, the generator being ours) whose state takes the
sweep's current ``num_samples`` in place of the saved total. :func:`refuse_fewer_samples` refuses, before Ray
starts, a number below the trials the sweep already started.

Tune writes a snapshot as several files (the trials, the generator's state), and a driver lost while they were
written or uploaded leaves them from different saves. The study itself is never behind: every ask, report and tell
goes to the journal as it happens (:mod:`..search.study_store`). So after its restore the generator makes the search
agree
with the trials of the newest experiment state (:func:`snapshot_trials`): its count of trials created is their
number, the limiter's running trials are those not ended, and an Optuna trial whose Tune trial was lost is told FAIL
(:meth:`~..search.searcher.PruningAwareOptunaSearch.forget_lost`). Each sample then runs once, and no Optuna trial is
left
RUNNING for constant liar to count for ever.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ray.tune.search import ConcurrencyLimiter, Searcher, SearchGenerator
from ray.tune.utils import flatten_dict

from sentsweep._compat.ray import restored_tune_config
from sentsweep.errors import ConfigError
from sentsweep.platform.search.searcher import PruningAwareOptunaSearch

if TYPE_CHECKING:
    import pyarrow.fs
    from ray.tune import Tuner

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.location import SweepLocation

logger = logging.getLogger(__name__)

#: The statuses of trials that will not run again (Tune resumes errored trials, but tells no searcher of them again).
ENDED = frozenset({"TERMINATED", "ERROR"})
#: Tune's experiment snapshots in a sweep folder (the newest name is the newest save).
EXPERIMENT_STATE = "experiment_state-*.json"


@dataclass(frozen=True)
class SnapshotTrial:
    """What a resume restores of one trial: its id, status and last result."""

    trial_id: str
    status: str
    last_result: dict[str, Any] = field(default_factory=dict)


def snapshot_trials(folder: str, filesystem: pyarrow.fs.FileSystem | None = None) -> list[SnapshotTrial] | None:
    """The trials of the newest experiment snapshot in ``folder`` (plain JSON, nothing unpickled); None when
    there is none."""
    import pyarrow.fs

    filesystem = filesystem or pyarrow.fs.LocalFileSystem()
    infos = filesystem.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True))
    names = fnmatch.filter([posixpath.basename(i.path) for i in infos], EXPERIMENT_STATE)
    if not names:
        return None
    with filesystem.open_input_stream(posixpath.join(folder, max(names))) as stream:
        state = json.loads(stream.readall().decode("utf-8"))
    trials = []
    for trial_json, metadata_json in state.get("trial_data", []):
        trial, metadata = json.loads(trial_json), json.loads(metadata_json)
        trials.append(SnapshotTrial(str(trial["trial_id"]), str(trial["status"]),
                                    dict(metadata.get("last_result") or {})))
    return trials


class ResizableSearchGenerator(SearchGenerator):
    """Tune's :class:`SearchGenerator` whose restored total number of samples is ``num_samples``, and whose restored
    search agrees with the restored trials.

    A larger total than the saved one also clears a saved "finished" flag (set when the searcher ran out or
    a stopper ended the experiment), so that the new trials are created; so does ``reopen`` (the budget changed:
    :mod:`~sentsweep.platform.driver.budget`). ``storage``: the sweep folder's file system and path, where
    the controller restores the trials from.
    """

    def __init__(self, searcher: Searcher, num_samples: int, reopen: bool = False,
                 storage: tuple[pyarrow.fs.FileSystem, str] | None = None) -> None:
        super().__init__(searcher)
        self.num_samples = num_samples
        self.reopen = reopen
        self.storage = storage
        self.restored: list[SnapshotTrial] | None = None

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
        """Tune's restore (from the driver's staging folder ``dirpath``), made to agree with the trials of the newest
        experiment state in the sweep's storage (the staging folder of an earlier driver on this host may hold newer
        files it never uploaded)."""
        self.restored = snapshot_trials(self.storage[1], self.storage[0]) if self.storage else snapshot_trials(dirpath)
        super().restore_from_dir(dirpath)
        if self.restored is not None:
            agree(self.searcher, self.restored)


def agree(search: Searcher, trials: list[SnapshotTrial]) -> None:
    """Make the limiter and the searcher inside ``search`` agree with ``trials``: the limiter's running trials are
    those not ended; Optuna is told the end of an ended trial it was not told, and FAIL for a trial Tune lost."""
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
    lost = search.forget_lost({t.trial_id for t in trials})
    if lost:
        logger.warning("%d Optuna trial(s) whose Tune trial the driver lost before saving it were told FAIL", lost)


def resize_search(tuner: Tuner, num_samples: int, reopen: bool = False,
                  storage: tuple[pyarrow.fs.FileSystem, str] | None = None) -> None:
    """Let the restored ``tuner`` run ``num_samples`` trials in total (also after earlier resumes).

    The chain is built as ``tune.run`` would (a ``ConcurrencyLimiter`` when ``max_concurrent_trials`` is set),
    and ``max_concurrent_trials`` is cleared so that ``tune.run`` does not wrap the generator again.
    """
    tune_config = restored_tune_config(tuner)
    if tune_config is None or tune_config.search_alg is None:
        raise ConfigError("this Ray Tune version does not let a resume change the number of samples",
                          field="num_samples")
    searcher: Searcher = base_searcher(tune_config.search_alg)
    if tune_config.max_concurrent_trials:
        searcher = ConcurrencyLimiter(searcher, max_concurrent=tune_config.max_concurrent_trials)
    tune_config.search_alg = ResizableSearchGenerator(searcher, num_samples, reopen, storage)
    tune_config.max_concurrent_trials = None


def base_searcher(search_alg: Any) -> Searcher:
    """The searcher inside Tune's wrappers (``SearchGenerator``, ``ConcurrencyLimiter``)."""
    while not isinstance(search_alg, Searcher) or isinstance(search_alg, ConcurrencyLimiter):
        search_alg = search_alg.searcher
    return search_alg


def started_trials(location: SweepLocation) -> tuple[int, int]:
    """How many trials Tune's saved experiment state holds, and how many of them ended (terminated or errored);
    ``(0, 0)`` when no state was saved yet."""
    from ray.tune import ExperimentAnalysis

    try:
        analysis = ExperimentAnalysis(location.uri if location.filesystem is None else location.fs_path,
                                      storage_filesystem=location.filesystem)
    except (ValueError, FileNotFoundError, OSError):  # no experiment state: Tuner.restore will say so
        return 0, 0
    ended = sum(t.status in ("TERMINATED", "ERROR") for t in analysis.trials)
    return len(analysis.trials), ended


def refuse_fewer_samples(location: SweepLocation, stored: SweepConfig, config: SweepConfig) -> None:
    """A :class:`ConfigError` when a resume lowers ``num_samples`` below the trials already started."""
    if config.num_samples >= stored.num_samples:
        return
    started, ended = started_trials(location)
    if config.num_samples < started:
        raise ConfigError(f"cannot lower num_samples to {config.num_samples}: the sweep already started {started} "
                          f"trials ({ended} of them ended) and a resume continues every started trial; use "
                          f"num_samples >= {started}", field="num_samples", file=location.uri)
