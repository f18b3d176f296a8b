"""A resume that changes the number of trials: ``sentsweep resume DIR --set num_samples=N --allow-change num_samples``.

Ray Tune 2.60 has no way to do this (``Tuner.restore`` is meant to continue the experiment as specified; see
ray-project/ray#33495): ``tune.run`` wraps the searcher restored from ``tuner.pkl`` in
``SearchGenerator(ConcurrencyLimiter(searcher))``, and ``TuneController.resume`` then restores that generator
from the sweep folder's (cloudpickled) ``search_gen_state-*.json`` (``SearchGenerator.restore_from_dir``), total
number of samples included (``_total_samples``; ``add_configurations``, which reads ``num_samples``, is skipped on a
resume). ``TuneConfig.num_samples`` is not read at all.

:func:`resize_search` therefore hands the restored Tuner a :class:`ResizableSearchGenerator` (the same chain
Tune would build, the generator being ours) whose :meth:`~ResizableSearchGenerator.set_state` keeps the
saved state but puts the sweep's current ``num_samples`` in place of the saved total. Every resume goes
through it (with an unchanged config the total is the saved one), and so does the repair of a snapshot whose files
come from different saves (:mod:`.torn_snapshot`). :func:`refuse_fewer_samples` refuses, before
Ray starts, a number below the trials the sweep already started: Tune resumes every started trial, so the
sweep could not end with fewer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ray.tune.search import ConcurrencyLimiter, Searcher, SearchGenerator

from sentsweep._compat.ray import restored_tune_config
from sentsweep.errors import ConfigError
from sentsweep.platform.torn_snapshot import base_searcher, reconcile, snapshot_trials

if TYPE_CHECKING:
    import pyarrow.fs
    from ray.tune import Tuner

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.storage import SweepLocation


class ResizableSearchGenerator(SearchGenerator):
    """Tune's :class:`SearchGenerator` whose restored total number of samples is ``num_samples``.

    A larger total than the saved one also clears a saved "finished" flag (set when the searcher ran out or
    a stopper ended the experiment), so that the new trials are created; so does ``reopen`` (the budget changed:
    :mod:`~sentsweep.platform.budget_stopper`). ``storage``: the sweep folder's file system and path, where
    the controller restores the trials from (the search is made to agree with them after its own restore).
    """

    def __init__(self, searcher: Searcher, num_samples: int, reopen: bool = False,
                 storage: tuple[pyarrow.fs.FileSystem, str] | None = None) -> None:
        super().__init__(searcher)
        self.num_samples = num_samples
        self.reopen = reopen
        self.storage = storage

    def set_state(self, state: dict[str, Any]) -> None:
        saved = int(state["total_samples"])
        super().set_state(state)
        self._total_samples = self.num_samples
        if self.num_samples > saved or self.reopen:
            self._finished = False

    def restore_from_dir(self, dirpath: str) -> None:
        """Tune's restore (from the driver's staging folder ``dirpath``, into which Tune downloaded the sweep's
        files), then the search made to agree with the trials the controller restored when the files come from
        different saves (:mod:`.torn_snapshot`). Those trials are the newest experiment state in the storage: the
        staging folder of a driver that ran on this host before may hold newer files it never uploaded, from
        which the search was just restored (review 14, M2)."""
        super().restore_from_dir(dirpath)
        trials = snapshot_trials(self.storage[1], self.storage[0]) if self.storage else snapshot_trials(dirpath)
        if trials is not None:
            reconcile(self, trials)


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
