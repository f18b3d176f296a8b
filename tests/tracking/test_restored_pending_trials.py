"""A sweep resumed after its driver died ends before Tune restarts a trial it restored as PENDING (a lowered budget,
fewer resources): the run the dead driver left RUNNING is ended with the experiment, and a PENDING trial that never
had a run gets none. Real parts: a sqlite MLflow store and the trials' folders; the trials are what the driver's
callback reads of Tune's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.fs
from mlflow import MlflowClient

from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking.vocabulary import OUTCOME_TAG, PARENT_TAG, ROLE_TAG, SWEEP_TAG, TRIAL_ID_TAG, TRIAL_ROLE


def _trial(root: Path, trial_id: str, status: str, number: int) -> Any:
    folder = root / f"toy_{trial_id}"
    folder.mkdir(parents=True)
    return SimpleNamespace(trial_id=trial_id, status=status, last_result={}, config={}, local_path=str(folder),
                           error_file=None, evaluated_params={}, experiment_tag=f"{number}_",
                           storage=SimpleNamespace(storage_filesystem=pyarrow.fs.LocalFileSystem(),
                                                   trial_fs_path=str(folder)))


def test_a_restored_pending_trials_run_is_ended_with_the_experiment(tmp_path, tracking_uri, private_cache) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment_id = client.create_experiment("toy")
    parent = client.create_run(experiment_id, run_name="toy-1").info.run_id
    left = client.create_run(experiment_id, run_name="t01", tags={  # the dead driver's: still RUNNING
        ROLE_TAG: TRIAL_ROLE, PARENT_TAG: parent, SWEEP_TAG: "toy-1", TRIAL_ID_TAG: "a0001"}).info.run_id
    settings = {"tracking_uri": tracking_uri, "experiment_id": experiment_id, "parent_run_id": parent,
                "sweep_name": "toy-1"}
    callback = TrialRunsCallback(settings, "ASHA", 0.0)
    restored, never_started = _trial(tmp_path, "a0001", "PENDING", 1), _trial(tmp_path, "a0002", "PENDING", 2)

    callback.on_experiment_end(trials=[restored, never_started])
    assert callback.deliverer.drain(30.0)

    run = client.get_run(left)
    assert (run.info.status, run.data.tags.get(OUTCOME_TAG)) == ("KILLED", "interrupted")
    assert client.search_runs([experiment_id], f"tags.`{TRIAL_ID_TAG}` = 'a0002'") == []
