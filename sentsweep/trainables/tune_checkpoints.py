"""A Tune trial's checkpoints on its storage: reporting them, restoring (with a fallback), the trial's best folder
and its work folder. Called from inside a Tune function trainable; Ray is imported inside the functions.

Where things are (the layout itself is :mod:`sentsweep.trainables.checkpoints`'):

- checkpoints: ``<trial>/checkpoint_NNNNNN/``, written by Tune from the folder the loop staged (``tune.report``);
- the best weights: ``<trial>/best/``, made from a persisted checkpoint's ``model/`` on the storage itself (hard
  links on a local or shared filesystem, a server-side copy on S3), so the worker uploads the weights once;
- the work folder (staged checkpoints, a downloaded checkpoint while restoring): ``<trial>/work/`` when the
  storage is a local or shared filesystem, so that a retried or resumed trial, which clears it first, also
  removes what a killed attempt left; on remote storage the trial's working directory on the node
  (``<Ray session>/artifacts/.../working_dirs/<trial>/work``), never synced. Not the trial folder
  ``get_trial_dir()`` names: Tune uploads that one to storage with the experiment state.

``<trial>`` is the trial's folder on the sweep's storage: :func:`sentsweep._compat.ray.trial_storage` (Ray's
DeveloperAPI ``get_storage()``; the public context names only the node-local trial folder) gives its filesystem
and path.
"""

from __future__ import annotations

from pathlib import Path

from sentsweep._compat.ray import trial_storage
from sentsweep.trainables.checkpoints import BEST_DIR, BestFolder, StoredFolder, previous_checkpoints
from sentsweep.trainables.train_task import ReportFn

WORK_DIR = "work"


def trial_folder() -> StoredFolder:
    """This trial's folder on the sweep's storage (called inside a Tune trial)."""
    storage = trial_storage()
    assert storage is not None, "called outside a Tune trial"
    return StoredFolder(storage.storage_filesystem, storage.trial_fs_path)


def work_dir(trial: StoredFolder) -> Path:
    """Where the loop stages checkpoints (see the module docstring)."""
    if trial.is_local:
        return Path(trial.path) / WORK_DIR
    storage = trial_storage()
    assert storage is not None, "called outside a Tune trial"
    return Path(storage.trial_working_directory) / WORK_DIR


def best_folder(trial: StoredFolder) -> BestFolder:
    return BestFolder(trial.child(BEST_DIR))


def reporter() -> ReportFn:
    """``report(metrics, checkpoint_dir)`` forwarding to ``ray.tune.report``; returns where Tune persisted the
    checkpoint (``tune.get_checkpoint()`` names it once the report returns)."""
    from ray import tune

    def report(metrics: dict[str, float], checkpoint_dir: Path | None) -> StoredFolder | None:
        if checkpoint_dir is None:
            tune.report(metrics)
            return None
        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(str(checkpoint_dir)))
        persisted = tune.get_checkpoint()
        return StoredFolder(persisted.filesystem, persisted.path) if persisted is not None else None

    return report


def restore_candidates() -> list[StoredFolder]:
    """The checkpoint Tune restores this trial from, then the trial's older ones (newest first): the loop falls
    back to the next when one is corrupt. Empty for a fresh trial."""
    from ray import tune

    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return []
    latest = StoredFolder(checkpoint.filesystem, checkpoint.path)
    return [latest, *previous_checkpoints(latest)]
