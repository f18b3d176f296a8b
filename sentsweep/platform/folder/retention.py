"""What a sweep folder keeps once the sweep is over: the best weights of its top ``checkpoint.keep_trials``
trials (and of ``keep``) in ``<trial>/best/``, no checkpoint, no ``work/`` folder, no weight of a trial Tune lost."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from sentsweep.platform.results import rank_results, result_trial_id
from sentsweep.trainables.checkpoints import BEST_DIR, NEXT_SUFFIX, BestFolder, StoredFolder, pick_best
from sentsweep.trainables.tune_checkpoints import WORK_DIR

if TYPE_CHECKING:
    from ray.tune import Result, ResultGrid


CHECKPOINT_PREFIX = "checkpoint_"


def trial_folder(result: Result) -> StoredFolder:
    return StoredFolder(result.filesystem, result.path)


def checkpoint_folder(result: Result) -> StoredFolder | None:
    checkpoint = result.checkpoint
    return StoredFolder(checkpoint.filesystem, checkpoint.path) if checkpoint is not None else None


def prune_sweep(results: ResultGrid, metric: str, mode: str, keep_trials: int | None,
                echo: Callable[[str], None] = print, keep: Collection[str] = (), stage: str = "search") -> None:
    """Apply the after-sweep retention to the trials of one ``stage`` and say so in one line; ``keep_trials`` None
    keeps every weight (work folders go in any case)."""
    removed = 0
    known = {trial_folder(r).path.rstrip("/") for r in results}
    sweeps = {trial_folder(r).parent().path: trial_folder(r).parent() for r in results}
    for folder in sweeps.values():
        for name in folder.subfolders():
            trial = folder.child(name)
            if trial.path.rstrip("/") in known:
                continue
            for sub in trial.subfolders():  # a trial folder Tune lost: its staging and its weights
                if sub in (WORK_DIR, BEST_DIR, BEST_DIR + NEXT_SUFFIX) or sub.startswith(CHECKPOINT_PREFIX):
                    removed += _remove(trial.child(sub))
    if keep_trials is None:
        for result in results:
            _remove(trial_folder(result).child(WORK_DIR))
        return
    ranked = rank_results(results, metric, mode)
    kept = {id(r) for r in ranked[:keep_trials]} | {id(r) for r in results if result_trial_id(r) in keep}
    for result in results:
        trial = trial_folder(result)
        if id(result) in kept:
            removed += keep_best_weights_only(trial, checkpoint_folder(result), mode)
        else:
            removed += BestFolder(trial.child(BEST_DIR)).remove() + _remove_checkpoints(trial)
    held = sum(id(r) in kept for r in results)
    echo(f"{stage} stage: kept the best weights of {held} trial{'' if held == 1 else 's'}, removed the weights of "
         f"{len(results) - held} and every checkpoint ({removed / 2**20:.1f} MiB freed)")


def keep_best_weights_only(trial: StoredFolder, checkpoint: StoredFolder | None, mode: str) -> int:
    """Keep the trial's best weights in ``<trial>/best``, removing its checkpoints; the bytes removed."""
    best = BestFolder(trial.child(BEST_DIR))
    best.settle()  # a replacement cut short: <trial>/best must hold the weights the user loads
    source = pick_best(checkpoint, best, mode)
    if source is not None and source.in_checkpoint and (best.marker() or {}).get("step") != source.step:
        best.keep(source.folder, source.step, source.value)
    return _remove_checkpoints(trial)


def _remove_checkpoints(trial: StoredFolder) -> int:
    return sum(_remove(trial.child(name)) for name in trial.subfolders()
               if name.startswith(CHECKPOINT_PREFIX) or name == WORK_DIR)


def _remove(folder: StoredFolder) -> int:
    size = sum(folder.files().values())
    folder.remove()
    return size
