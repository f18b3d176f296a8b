"""A sweep whose driver is lost (SIGKILL), and one whose whole Ray cluster is lost (the head and every node, the
driver with them), finished by ``sentsweep resume s3://...`` from another working directory, with nothing local:
the sweep's folder in S3 and the MLflow server hold all it needs. Every trial ends once, one MLflow run each, a
trial finished before the loss is not trained again."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow.entities import Run

from sentsweep.tracking.vocabulary import ATTEMPT_TAG, TRIAL_ID_TAG
from tests.cluster.scenario import (
    assert_each_trial_once,
    experiment_of,
    figures,
    parent_runs,
    retrained_steps,
    run_driver,
    settled_runs,
    snapshot_checkpoint_steps,
    start_driver,
    steps_of,
    sweep_folder,
    sweep_yaml,
    training_with_checkpoint,
    wait_for,
)
from tests.cluster.target import Target, record

pytestmark = pytest.mark.cluster
ORPHANS_TAG = "sentsweep.deleted_orphan_runs"  # the runs of trials lost with the driver (sweep_tracking.py)
MAX_STEPS = 12


def _finished_and_snapshotted(cluster: Target, name: str) -> Callable[[list[Run]], tuple[Run, Run] | None]:
    """The moment one trial has finished and another, with steps left to train, has a checkpoint in Tune's
    experiment snapshot in S3 (:func:`snapshot_checkpoint_steps`: the snapshot trails the checkpoints; a trial
    whose checkpoint is not in it yet is started afresh by the resume, as Tune does)."""

    def moment(runs: list[Run]) -> tuple[Run, Run] | None:
        done = [r for r in runs if r.info.status == "FINISHED"]
        candidates = training_with_checkpoint(runs, 4, MAX_STEPS - 2)
        if not done or not candidates:
            return None
        snapshotted = snapshot_checkpoint_steps(cluster, sweep_folder(cluster, name))
        training = [r for r in candidates if r.data.tags[TRIAL_ID_TAG] in snapshotted]
        return (done[0], training[0]) if training else None

    return moment


def _resumed_from(steps: list[int]) -> int | None:
    """The first step logged again after a restore (the first one not after its predecessor), None if none was."""
    return next((step for before, step in itertools.pairwise(steps) if step <= before), None)


def _lose_and_resume(cluster: Target, tiny_bert_dir: Path, tmp_path: Path, name: str, lose_head: bool) -> None:
    config = sweep_yaml(cluster, tmp_path, name, tiny_bert_dir, num_samples=4, max_concurrent_trials=2,
                        fixed={"max_steps": MAX_STEPS, "sleep_s": 1.0})
    experiment = experiment_of(config)
    driver = start_driver(cluster, ["sweep", str(config)], tmp_path / "first")
    try:
        finished, training = wait_for(cluster, experiment, _finished_and_snapshotted(cluster, name), driver,
                                      "a trial finished and another's checkpoint was in Tune's snapshot")
    finally:
        driver.kill()
    snapshotted = snapshot_checkpoint_steps(cluster, sweep_folder(cluster, name))  # what the resume restores
    cut_short = [r for r in settled_runs(cluster, experiment) if r.info.status == "RUNNING"]
    if lose_head:
        cluster.stack.restart_ray()  # every node stopped, the head included; a fresh cluster started
    folder = sweep_folder(cluster, name)
    elsewhere = tmp_path / "elsewhere"  # another working directory: no config, no local state
    endpoint = ["--storage-endpoint-url", cluster.endpoint_url] if cluster.endpoint_url else []
    # the test machine is the cluster and its storage: its resume trusts the folder it wrote (--trust-storage)
    status, out, wall = run_driver(cluster, ["resume", folder, *endpoint, "--trust-storage"], elsewhere)
    assert status == 0, out[-4000:]
    runs = assert_each_trial_once(cluster, experiment, 4, MAX_STEPS,
                                  cut_short=frozenset(r.data.tags[TRIAL_ID_TAG] for r in cut_short))
    again = next(r for r in runs if r.data.tags[TRIAL_ID_TAG] == finished.data.tags[TRIAL_ID_TAG])
    assert steps_of(cluster, again) == list(range(2, MAX_STEPS + 1, 2)), "a finished trial was trained again"
    (parent,) = parent_runs(cluster, experiment)
    lost = [r for r in cut_short if r.info.run_id in parent.data.tags.get(ORPHANS_TAG, "")]
    assert training.data.tags[TRIAL_ID_TAG] in snapshotted
    for run in runs:  # a trial cut short with a checkpoint in the snapshot continued from it, not from scratch
        trial_id = run.data.tags[TRIAL_ID_TAG]
        if trial_id in snapshotted and trial_id in {r.data.tags[TRIAL_ID_TAG] for r in cut_short}:
            assert int(run.data.tags[ATTEMPT_TAG]) >= 2, run.data.tags
            steps = steps_of(cluster, run)
            assert steps.count(2) == 1, f"a checkpointed trial started over instead of continuing: {steps}"
            resumed = _resumed_from(steps)
            assert resumed is None or resumed > snapshotted[trial_id], (steps, snapshotted[trial_id])
    assert training.info.run_id not in parent.data.tags.get(ORPHANS_TAG, ""), "a trial of Tune's snapshot was lost"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["driver.log"], "the resume wrote local files"
    scenario = "head loss" if lose_head else "driver loss"
    record(scenario, **figures(cluster, experiment, name, driver.wall_s + wall, 4), resume_wall_s=round(wall, 1),
           cut_short_trials=len(cut_short), lost_before_snapshot=len(lost),
           retrained_steps=retrained_steps(cluster, runs))


def test_a_killed_driver_is_resumed_from_s3_elsewhere(cluster: Target, tiny_bert_dir: Path, tmp_path: Path) -> None:
    _lose_and_resume(cluster, tiny_bert_dir, tmp_path, "driver-loss", lose_head=False)


def test_a_lost_cluster_is_resumed_from_s3_on_a_fresh_one(cluster: Target, tiny_bert_dir: Path,
                                                          tmp_path: Path) -> None:
    cluster.require_local("ray")
    _lose_and_resume(cluster, tiny_bert_dir, tmp_path, "head-loss", lose_head=True)
