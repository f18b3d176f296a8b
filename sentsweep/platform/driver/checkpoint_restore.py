"""Restoring a trial whose snapshotted checkpoint Tune has already deleted.

Tune restores a trial from the checkpoint its last experiment snapshot names. It deletes a trial's older
checkpoints (``num_to_keep``) as soon as newer ones register, but snapshots the experiment only every so often
(Ray's "auto" period: 10 s or more), so after the driver is lost the snapshot may name a checkpoint that is
gone while newer ones exist. Tune's ``Trainable.restore`` then raises "Could not recover from checkpoint as it
does not exist on storage anymore" on every retry and the trial fails (seen in tests/cluster's driver-loss
scenario: trials reporting every ~2 s).

:func:`with_checkpoint_fallback` gives the trainable a ``restore`` that, for a missing checkpoint, takes the
newest ``checkpoint_*`` folder the trial still holds (the loop falls back past a corrupt one:
:func:`sentsweep.trainables.tune_checkpoints.restore_candidates`), or starts the trial afresh when none is left,
with a warning either way, and a note the trial reports (:mod:`sentsweep.trainables.restore_note`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sentsweep._compat.ray import with_checkpoint
from sentsweep.trainables.checkpoints import StoredFolder
from sentsweep.trainables.restore_note import note_tune_fallback

logger = logging.getLogger(__name__)

CHECKPOINT_PREFIX = "checkpoint_"


def newest_checkpoint(trial: StoredFolder) -> StoredFolder | None:
    """The trial folder's newest ``checkpoint_*`` folder (Tune numbers them in order), None when there is none."""
    names = sorted(n for n in trial.subfolders() if n.startswith(CHECKPOINT_PREFIX))
    return trial.child(names[-1]) if names else None


def with_checkpoint_fallback(train_func: Callable[[dict[str, Any]], Any]) -> type:
    """``train_func`` as Tune's function trainable class, restoring from the newest checkpoint left when the one
    Tune's snapshot names is gone (module docstring)."""
    from ray.tune import Checkpoint
    from ray.tune.trainable.function_trainable import wrap_function

    name = getattr(train_func, "__name__", "func")  # as Tune names a function trainable
    base = wrap_function(train_func, name=name)

    class CheckpointFallback(base):  # type: ignore[misc, valid-type]
        def restore(self, checkpoint_path: Any) -> None:
            checkpoint = getattr(checkpoint_path, "checkpoint", None)
            if checkpoint is None:
                return super().restore(checkpoint_path)
            named = StoredFolder(checkpoint.filesystem, checkpoint.path)
            if named.exists():
                return super().restore(checkpoint_path)
            newest = newest_checkpoint(named.parent())
            gone = f"{named.name} is gone (deleted after Tune's last snapshot)"
            note_tune_fallback(named.parent().path, gone if newest is None else f"{gone}; {newest.name} is the newest")
            if newest is None:
                logger.warning("%s is gone and the trial holds no other checkpoint: it starts afresh", named.path)
                return None
            logger.warning("%s is gone (deleted after Tune's last snapshot): restoring from %s", named.path,
                           newest.path)
            replacement = Checkpoint(newest.path, filesystem=newest.fs)
            return super().restore(with_checkpoint(checkpoint_path, replacement))

    CheckpointFallback.__name__ = CheckpointFallback.__qualname__ = name
    return CheckpointFallback
