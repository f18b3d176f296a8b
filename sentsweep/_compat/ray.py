"""Ray's names outside its public API, each behind one function that imports it (see :mod:`sentsweep._compat`)."""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any


def set_single_machine(on: bool) -> bool:
    """Set the driver's single-machine switch (True: every Ray address on 127.0.0.1), which Ray reads from
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` only when it is imported; returns the previous value."""
    from ray._private import ray_constants

    before = not ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = not on
    return before


def reload_auth_settings() -> None:
    """Make the driver's Ray read its configuration and its authentication token from the environment again."""
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


@contextlib.contextmanager
def tune_propagating_none_of(names: Collection[str]) -> Iterator[None]:
    """Inside the block, Ray Tune copies none of the variables ``names`` (it copies ``AWS_*`` keys, among others)
    from the driver's environment into the runtime_env of the trial actors it creates."""
    from ray.tune.execution import class_cache

    before = class_cache.ENV_VARS_TO_PROPAGATE
    class_cache.ENV_VARS_TO_PROPAGATE = frozenset(before) - set(names)
    try:
        yield
    finally:
        class_cache.ENV_VARS_TO_PROPAGATE = before


def with_checkpoint(result: Any, checkpoint: Any) -> Any:
    """``result`` (what Tune hands ``Trainable.restore``) with ``checkpoint`` in place of its own, metrics kept."""
    from ray.train._internal.session import _TrainingResult

    return _TrainingResult(checkpoint=checkpoint, metrics=result.metrics)


def restored_tune_config(tuner: Any) -> Any:
    """The ``TuneConfig`` a restored ``tuner`` will run with (None when this Ray keeps it elsewhere): a resume
    changes it since ``Tuner.restore`` takes no new one, and Tune reads it again at every ``fit``."""
    return getattr(getattr(tuner, "_local_tuner", None), "_tune_config", None)


@dataclass(frozen=True)
class TrialStorage:
    """Where a Tune trial's folders are: its storage's file system, the experiment and trial folders there, and
    the trial's working folder on its node. The names are those of Ray's ``StorageContext``."""

    storage_filesystem: Any
    experiment_fs_path: str
    trial_fs_path: str
    trial_working_directory: str


def trial_storage() -> TrialStorage | None:
    """The storage of the calling Tune trial (a DeveloperAPI); None outside one."""
    from ray import tune

    with warnings.catch_warnings():  # outside a trial Ray warns once and returns None
        warnings.simplefilter("ignore")
        storage = tune.get_context().get_storage()
    if storage is None:
        return None
    return TrialStorage(storage.storage_filesystem, storage.experiment_fs_path, storage.trial_fs_path,
                        storage.trial_working_directory)


#: The module of the threads in which Ray Tune's driver uploads its staging folder (``_BackgroundProcess``).
TUNE_SYNC_MODULE = "ray.train._internal.syncer"


def wait_for_tune_syncs(timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` seconds for the uploads Ray Tune runs in background threads of this process (its
    experiment snapshots of the driver's staging folder) to end; whether none runs now."""
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if getattr(getattr(thread, "_target", None), "__module__", None) == TUNE_SYNC_MODULE:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                return False
    return True


def trial_number(trial_or_result: Any) -> int | None:
    """The number Tune gave the trial when it created it (from 1 for a searcher's, from 0 for plain variants; a restore
    keeps it), from its ``experiment_tag`` (``"3_lr=0.001"``) of a ``Trial`` or a result dict; None when it has none."""
    tag = (trial_or_result.get("experiment_tag") if isinstance(trial_or_result, dict)
           else getattr(trial_or_result, "experiment_tag", None))
    head = str(tag or "").split("_", 1)[0]
    return int(head) if head.isdigit() else None
