"""Fractional GPUs on a multi-node cluster: eight trials of ``gpu: 0.5`` on two worker nodes of two logical GPUs
each train on the CPU (no CUDA here), report where Ray put them (MLflow tags ``node_ip``, ``node_id``,
``gpu_ids``; ``sentsweep compare`` shows them), use both nodes, and never share one GPU among more than two.
And a sqlite tracking store is refused on that cluster before any trial starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.tracking.names import GPU_IDS_TAG, NODE_ID_TAG, NODE_IP_TAG
from sentsweep.tracking.vocabulary import TRIAL_ID_TAG
from tests.cluster.scenario import (
    experiment_of,
    figures,
    gpu_share,
    run_driver,
    sweep_yaml,
    trial_runs,
)
from tests.cluster.target import Target, record

pytestmark = pytest.mark.cluster


def test_half_gpu_trials_spread_over_both_worker_nodes(cluster: Target, tiny_bert_dir: Path, tmp_path: Path) -> None:
    config = sweep_yaml(cluster, tmp_path, "placement", tiny_bert_dir, num_samples=8, max_concurrent_trials=8)
    status, out, wall = run_driver(cluster, ["sweep", str(config), "--no-finalize"], tmp_path)
    assert status == 0, out[-4000:]
    runs = trial_runs(cluster, experiment_of(config))
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 8
    assert all({NODE_IP_TAG, NODE_ID_TAG, GPU_IDS_TAG} <= set(r.data.tags) for r in runs)
    assert all(len(r.data.tags[GPU_IDS_TAG].split(",")) == 1 for r in runs), "half a GPU is one GPU id"
    nodes = {r.data.tags[NODE_ID_TAG] for r in runs}
    if cluster.stack.ray is not None:
        alive = cluster.stack.ray.alive_nodes(retry_s=60)
        workers = {node_id for name, node_id in alive.items() if name.startswith("worker")}
        assert nodes == workers, "both worker nodes (and only they: the head has no GPU) ran trials"
    assert gpu_share(runs) <= 2, "more trials on one GPU than gpu: 0.5 allows"
    assert "placement" in out and runs[0].data.tags[NODE_ID_TAG][:8] in out, "compare shows where trials ran"
    record("placement", **figures(cluster, experiment_of(config), "placement", wall, 8), gpu_share=gpu_share(runs))


def test_sqlite_tracking_is_the_drivers_alone(cluster: Target, tiny_bert_dir: Path, tmp_path: Path) -> None:
    """Only the driver writes to MLflow: with a cluster on this machine it keeps the sqlite file, one run per trial;
    a cluster on another machine is refused before anything is created."""
    from mlflow import MlflowClient

    from sentsweep.platform.tracking.store import is_remote_address

    database = tmp_path / "mlruns.db"
    config = sweep_yaml(cluster, tmp_path, "sqlite-driver", tiny_bert_dir,
                        tracking={"uri": f"sqlite:///{database}", "experiment": "sqlite-driver"})
    status, out, wall = run_driver(cluster, ["sweep", str(config)], tmp_path)
    assert "Traceback" not in out
    bucket, prefix = cluster.bucket_and_prefix("sqlite-driver")
    keys = [item["Key"] for item in cluster.s3_client().list_objects_v2(Bucket=bucket, Prefix=prefix).get(
        "Contents", [])]
    if is_remote_address(cluster.ray_address):
        errors = [line for line in out.splitlines() if line.startswith("sentsweep sweep: error:")]
        assert status == 2 and len(errors) == 1 and "mlflow server" in errors[0], out[-4000:]
        assert keys == [] and not database.exists()
        record("sqlite refused", wall_s=round(wall, 1), message=errors[0].split("error: ", 1)[1][:200])
        return
    assert status == 0, out[-4000:]
    sqlite = MlflowClient(tracking_uri=f"sqlite:///{database}")
    experiment = sqlite.get_experiment_by_name("sqlite-driver")
    trials = sqlite.search_runs([experiment.experiment_id], "tags.`sentsweep.role` = 'trial'")
    assert len(trials) == 4 == len({r.data.tags[TRIAL_ID_TAG] for r in trials})
    assert all(r.info.status == "FINISHED" for r in trials)
    record("sqlite with a local cluster", trials=4, mlflow_runs=len(trials), running_left=0,
           s3_sweep_objects=len(keys), wall_s=round(wall, 1))
