"""A sweep whose driver is lost (SIGKILL), and one whose whole Ray cluster is lost (the head and every node, the
driver with them), finished by ``sentsweep resume s3://...`` from another working directory, with nothing local:
the sweep's folder in S3 and the MLflow server hold all it needs. Every trial ends once, one MLflow run each, a
trial finished before the loss is not trained again."""

from __future__ import annotations

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
    start_driver,
    steps_of,
    sweep_folder,
    sweep_yaml,
    training_with_checkpoint,
    trial_runs,
    wait_for,
)
from tests.cluster.target import Target, record

pytestmark = pytest.mark.cluster
ORPHANS_TAG = "sentsweep.deleted_orphan_runs"  # the runs of trials lost with the driver (sweep_tracking.py)
MAX_STEPS = 12


def _finished_and_training(runs: list[Run]) -> tuple[Run, Run] | None:
    """One trial finished and another trained past its third checkpoint with three evaluations to go: Tune forces
    an experiment snapshot once a trial has checkpointed ``num_to_keep`` (2) times since the last one, so by then
    the trial is in the snapshot in S3 (one created after the last snapshot is lost with the driver: rerun as a new
    trial, its run deleted, ``platform/sweep_tracking.py``)."""
    done = [r for r in runs if r.info.status == "FINISHED"]
    training = training_with_checkpoint(runs, 6, MAX_STEPS - 4)
    return (done[0], training[0]) if done and training else None


def _lose_and_resume(cluster: Target, tiny_bert_dir: Path, tmp_path: Path, name: str, lose_head: bool) -> None:
    config = sweep_yaml(cluster, tmp_path, name, tiny_bert_dir, num_samples=4, max_concurrent_trials=2,
                        fixed={"max_steps": MAX_STEPS, "sleep_s": 1.0})
    experiment = experiment_of(config)
    driver = start_driver(cluster, ["sweep", str(config)], tmp_path / "first")
    try:
        finished, training = wait_for(cluster, experiment, _finished_and_training, driver,
                                      "a trial finished and another trained past a checkpoint")
    finally:
        driver.kill()
    cut_short = [r for r in trial_runs(cluster, experiment) if r.info.status == "RUNNING"]
    if lose_head:
        cluster.stack.restart_ray()  # every node stopped, the head included; a fresh cluster started
    folder = sweep_folder(cluster, name)
    elsewhere = tmp_path / "elsewhere"  # another working directory: no config, no local state
    endpoint = ["--storage-endpoint-url", cluster.endpoint_url] if cluster.endpoint_url else []
    status, out, wall = run_driver(cluster, ["resume", folder, *endpoint], elsewhere)
    assert status == 0, out[-4000:]
    runs = assert_each_trial_once(cluster, experiment, 4, MAX_STEPS,
                                  cut_short=frozenset(r.data.tags[TRIAL_ID_TAG] for r in cut_short))
    again = next(r for r in runs if r.data.tags[TRIAL_ID_TAG] == finished.data.tags[TRIAL_ID_TAG])
    assert steps_of(cluster, again) == list(range(2, MAX_STEPS + 1, 2)), "a finished trial was trained again"
    (parent,) = parent_runs(cluster, experiment)
    lost = [r for r in cut_short if r.info.run_id in parent.data.tags.get(ORPHANS_TAG, "")]
    for run in runs:  # a trial cut short continued from its S3 checkpoint (unless Tune lost it: rerun anew)
        if run.data.tags[TRIAL_ID_TAG] in {r.data.tags[TRIAL_ID_TAG] for r in cut_short if r not in lost}:
            assert int(run.data.tags[ATTEMPT_TAG]) >= 2, run.data.tags
            assert steps_of(cluster, run).count(2) == 1, "a checkpointed trial started over instead of continuing"
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
