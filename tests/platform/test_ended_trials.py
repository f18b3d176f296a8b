"""A trial that ended keeps its best weights alone until the sweep's end (``platform/driver/callbacks.py``): real Tune
trial objects over a real training loop's checkpoints on the local file system."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.callbacks import TrimEndedTrials, stage_callbacks
from sentsweep.trainables.checkpoints import BestFolder, StoredFolder
from sentsweep.trainables.loop import TrainingLoop
from tests.trainables.test_checkpoints import _persist_like_tune
from tests.trainables.test_loop import RegressionTask, _config

pytestmark = pytest.mark.usefixtures("ray_session")


def trained_trial(tmp_path: Path, trial_id: str):
    """A Tune trial whose storage folder holds the checkpoints and best weights of a real training loop (best: 5.0
    at step 8 of 12), with its latest checkpoint registered as Tune registers it."""
    import pyarrow.fs
    from ray.train import Checkpoint
    from ray.train._internal.session import _TrainingResult
    from ray.train._internal.storage import StorageContext
    from ray.tune.experiment import Trial

    storage = StorageContext(storage_path=str(tmp_path / "sweeps"), experiment_dir_name="exp",
                             storage_filesystem=pyarrow.fs.LocalFileSystem())
    trial = Trial("__fake", stub=True, storage=storage, trial_id=trial_id)
    trial.init_local_path()  # names the trial's folder
    folder = Path(trial.storage.trial_fs_path)
    report, persisted = _persist_like_tune(folder)
    best = BestFolder(StoredFolder.local(folder / "best"))
    TrainingLoop(RegressionTask(), _config(), report=report, best=best, work_dir=folder / "work").run()
    latest = persisted[max(persisted)]
    trial.run_metadata.checkpoint_manager.register_checkpoint(
        _TrainingResult(checkpoint=Checkpoint(str(latest), pyarrow.fs.LocalFileSystem()), metrics={}))
    return trial, folder


def test_an_ended_trial_keeps_its_best_weights_and_loses_its_checkpoints(tmp_path: Path) -> None:
    """Ended trials kept every checkpoint (weights and optimizer state) until finalize."""
    from ray.tune.experiment import Trial

    ended, folder = trained_trial(tmp_path, "t1")
    errored, errored_folder = trained_trial(tmp_path / "b", "t2")
    assert any(p.name.startswith("checkpoint_") for p in folder.iterdir())
    ended.set_status(Trial.TERMINATED)
    errored.set_status(Trial.ERROR)
    trimming = TrimEndedTrials("max", delay_s=3600)
    for trial in (ended, errored):
        trimming.on_trial_complete(0, [], trial)
    trimming.on_step_end(0, [])
    assert any(p.name.startswith("checkpoint_") for p in folder.iterdir())  # not before the delay
    trimming.delay_s = 0
    trimming.on_step_end(0, [])
    assert sorted(p.name for p in folder.iterdir()) == ["best"]
    marker = BestFolder(StoredFolder.local(folder / "best")).marker()
    assert (marker["step"], marker["value"]) == (8, 5.0) and (folder / "best" / "w.safetensors").is_file()
    # an errored trial keeps its checkpoints: a resume may run it again from them
    assert any(p.name.startswith("checkpoint_") for p in errored_folder.iterdir())
    assert trimming._ended == {}


def test_a_sweep_that_keeps_every_weight_trims_nothing() -> None:
    keep_all = SweepConfig(name="s", method="cosent", checkpoint={"keep_trials": None})
    keep_to_the_end = SweepConfig(name="s", method="cosent", checkpoint={"trim_ended_after_s": None})
    def storage_trimming(config: SweepConfig) -> list[TrimEndedTrials]:
        return [c for c in stage_callbacks(config, 4) if isinstance(c, TrimEndedTrials)]

    assert storage_trimming(keep_all) == storage_trimming(keep_to_the_end) == []
    (trimming,) = storage_trimming(SweepConfig(name="s", method="cosent"))
    assert isinstance(trimming, TrimEndedTrials) and trimming.delay_s == 120.0
