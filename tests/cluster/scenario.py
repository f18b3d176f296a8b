"""What the cluster scenarios share: a toy sweep's YAML on the target, its driver as a process of its own
(``python -m tests.cluster.toy_cli``, killable), waiting for a moment in MLflow, and the figures of a sweep
(trials per node, attempts, runs vs trials, RUNNING left, bytes in S3, wall time)."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow import MlflowClient
from mlflow.entities import Run

from sentsweep.tracking.names import GPU_IDS_TAG, NODE_ID_TAG, tracked_key
from sentsweep.tracking.vocabulary import ATTEMPT_TAG, REASON_TAG, ROLE_TAG, TRIAL_ID_TAG
from tests.cluster.target import Target

TOY_CLI = ("-m", "tests.cluster.toy_cli")


def sweep_yaml(target: Target, folder: Path, name: str, model: Path, **overrides: Any) -> Path:
    """A toy sweep on the target: fractional GPUs (0.5: two trials per GPU), S3 storage, the tracking server;
    ``fixed`` overrides merge into the toy's defaults."""
    fixed = {"model": str(model), "max_steps": 4, "eval_every": 2, "batch_size": 16, "max_dev_pairs": 40,
             "test_tasks": "stsb_test", "warmup_ratio": 0.0, **overrides.pop("fixed", {})}
    raw: dict[str, Any] = {
        "name": name, "method": "toy", "search_space": "toy", "num_samples": 4, "max_concurrent_trials": 4,
        "scheduler": {"type": "fifo"}, "resources": {"cpu": 0.5, "gpu": 0.5}, "fixed": fixed,
        "storage_path": f"{target.storage_root}/{name}", "storage_endpoint_url": target.endpoint_url,
        "tracking": {"uri": target.tracking_uri, "experiment": f"{name}-{int(time.time())}"},
        "seed": 3, "startup_trials": 2, "final_tasks": "stsb_test", "max_failures": 2, "plots": False,
        "checkpoint": {"num_to_keep": 2, "keep_trials": 1},
        "confirm": {"top_k": 0},  # the scenarios count the search's trials: no confirmation stage
        **overrides,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@dataclass
class Driver:
    """A ``sentsweep`` driver process (its own process group) and its log."""

    process: subprocess.Popen
    log: Path
    started: float
    ended: float | None = None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def wall_s(self) -> float:
        """Seconds from its start to its end (to now while it runs)."""
        return (self.ended or time.monotonic()) - self.started

    def wait(self, timeout: float = 480) -> int:
        try:
            status = self.process.wait(timeout=timeout)
            self.ended = time.monotonic()
            return status
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the driver did not end within {timeout:.0f} s:\n{self.output()[-4000:]}")

    def kill(self) -> None:
        """SIGKILL the driver's process group (only the driver: the trials are on the cluster's nodes)."""
        self.ended = self.ended or time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


def start_driver(target: Target, argv: list[str], cwd: Path, log_name: str = "driver.log") -> Driver:
    """``sentsweep ARGV --address <cluster>`` (the toy registered) in ``cwd``."""
    cwd.mkdir(parents=True, exist_ok=True)
    log = cwd / log_name
    with log.open("w") as sink:
        process = subprocess.Popen([sys.executable, *TOY_CLI, *argv, "--address", target.ray_address],
                                   stdout=sink, stderr=subprocess.STDOUT, cwd=cwd, env=target.env,
                                   start_new_session=True)
    return Driver(process, log, time.monotonic())


def run_driver(target: Target, argv: list[str], cwd: Path, timeout: float = 480) -> tuple[int, str, float]:
    """A driver run to its end: exit status, output, wall seconds."""
    driver = start_driver(target, argv, cwd)
    try:
        status = driver.wait(timeout)
    finally:
        driver.kill()
    return status, driver.output(), driver.wall_s


def client(target: Target) -> MlflowClient:
    return MlflowClient(tracking_uri=target.tracking_uri)


def trial_runs(target: Target, experiment: str) -> list[Run]:
    found = client(target).get_experiment_by_name(experiment)
    if found is None:
        return []
    return client(target).search_runs([found.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'", max_results=1000)


def experiment_of(config: Path) -> str:
    return yaml.safe_load(config.read_text())["tracking"]["experiment"]


def wait_for(target: Target, experiment: str, moment: Callable[[list[Run]], Any], driver: Driver | None,
             what: str, timeout: float = 300) -> Any:
    """Poll the experiment's trial runs until ``moment(runs)`` is truthy; return it."""
    deadline = time.monotonic() + timeout
    last_error = ""
    while time.monotonic() < deadline:
        if driver is not None and driver.process.poll() is not None:
            pytest.fail(f"the driver ended before {what} (last MLflow error: {last_error or 'none'}):\n"
                        f"{driver.output()[-4000:]}")
        try:
            found = moment(trial_runs(target, experiment))
        except Exception as exc:  # the server may be restarting
            last_error = f"{type(exc).__name__}: {exc}"[:300]
            found = None
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f"no moment when {what} within {timeout:.0f} s (last MLflow error: {last_error or 'none'})"
                + (f":\n{driver.output()[-4000:]}" if driver else ""))


def training_with_checkpoint(runs: list[Run], min_step: int = 2, max_step: int | None = None) -> list[Run]:
    """Runs still RUNNING that logged a dev evaluation (so a checkpoint) at ``min_step`` or later, and none
    after ``max_step`` (so that they still have steps to train when the test strikes)."""
    return [r for r in runs if r.info.status == "RUNNING" and NODE_ID_TAG in r.data.tags
            and min_step <= r.data.metrics.get(tracked_key("step"), 0) <= (max_step or float("inf"))]


def settled_runs(target: Target, experiment: str, quiet_s: float = 3.0, timeout: float = 60.0) -> list[Run]:
    """The trial runs once their statuses have not changed for ``quiet_s`` (after a driver's kill its trials' actors
    live on for a second or two and may still end their runs)."""
    deadline = time.monotonic() + timeout
    runs = trial_runs(target, experiment)
    seen, since = {r.info.run_id: r.info.status for r in runs}, time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(0.5)
        runs = trial_runs(target, experiment)
        now = {r.info.run_id: r.info.status for r in runs}
        if now != seen:
            seen, since = now, time.monotonic()
    return runs


def sweep_folder(target: Target, name: str) -> str:
    """The s3:// folder of the one sweep under ``storage_root/name`` (found by its manifest)."""
    bucket, prefix = target.bucket_and_prefix(name)
    keys = [item["Key"] for page in target.s3_client().get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix) for item in page.get("Contents", []) if item["Key"].endswith(
        "/sentsweep_sweep.json")]
    assert len(keys) == 1, f"expected one sweep under s3://{bucket}/{prefix}, found {keys}"
    return f"s3://{bucket}/{keys[0].rsplit('/', 1)[0]}"


def snapshot_checkpoint_steps(target: Target, folder: str) -> dict[str, int]:
    """By trial id, the step of the checkpoint each trial has in the newest Tune experiment snapshot in the sweep's
    ``folder`` (s3://...): what a resume restores it from. Trials without one (Tune starts them afresh) and
    trials the snapshot does not hold (rerun as new trials) are absent. Tune writes the snapshot every so often and
    whenever a trial has checkpointed ``num_to_keep`` times since the last one, so it trails the checkpoints."""
    import json

    from ray.tune.trainable.metadata import _TrainingRunMetadata

    bucket, _, prefix = folder.removeprefix("s3://").partition("/")
    s3 = target.s3_client()
    names = [item["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=f"{prefix}/experiment_state-", Delimiter="/") for item in page.get("Contents", [])]
    if not names:
        return {}
    snapshot = json.loads(s3.get_object(Bucket=bucket, Key=max(names))["Body"].read())
    steps = {}
    for trial_json, metadata_json in snapshot["trial_data"]:
        latest = _TrainingRunMetadata.from_json_state(metadata_json).checkpoint_manager.latest_checkpoint_result
        if latest is not None:
            steps[json.loads(trial_json)["trial_id"]] = int(latest.metrics["step"])
    return steps


def s3_bytes(target: Target, bucket: str, prefix: str) -> tuple[int, int]:
    from tools.harness.s3_server import bucket_bytes

    return bucket_bytes(target.s3_client(), bucket, prefix)


def figures(target: Target, experiment: str, name: str, wall_s: float, num_samples: int) -> dict[str, Any]:
    """The closing note's figures of one scenario's sweep."""
    runs = trial_runs(target, experiment)
    names = target.stack.remember_nodes() if target.stack.ray is not None else {}
    per_node = collections.Counter(names.get(r.data.tags.get(NODE_ID_TAG, ""), r.data.tags.get(NODE_ID_TAG, "?")[:8])
                                   for r in runs)
    bucket, prefix = target.bucket_and_prefix(name)
    objects, size = s3_bytes(target, bucket, prefix)
    found = client(target).get_experiment_by_name(experiment)
    artifacts = (0, 0)
    if target.stack.s3 is not None and found is not None:
        artifacts = s3_bytes(target, target.stack.s3.bucket, f"mlflow-artifacts/{found.experiment_id}/")
    return {
        "trials": num_samples, "mlflow_runs": len(runs), "distinct_trials": len({r.data.tags.get(TRIAL_ID_TAG)
                                                                                 for r in runs}),
        "trials_per_node": dict(sorted(per_node.items())),
        "attempts": dict(sorted(collections.Counter(int(r.data.tags.get(ATTEMPT_TAG, "1")) for r in runs).items())),
        "running_left": sum(r.info.status == "RUNNING" for r in runs),
        "statuses": dict(collections.Counter(r.info.status for r in runs)),
        "s3_sweep_objects": objects, "s3_sweep_bytes": size,
        "s3_artifact_objects": artifacts[0], "s3_artifact_bytes": artifacts[1], "wall_s": round(wall_s, 1),
    }


def gpu_share(runs: list[Run]) -> int:
    """The most trials that ran at once on one (node, Ray GPU id), from the runs' start and end times."""
    events: dict[tuple[str, str], list[tuple[int, int]]] = collections.defaultdict(list)
    for run in runs:
        for gpu in filter(None, run.data.tags.get(GPU_IDS_TAG, "").split(",")):
            key = (run.data.tags[NODE_ID_TAG], gpu)
            events[key] += [(run.info.start_time, 1), (run.info.end_time or 2**62, -1)]
    most = 0
    for points in events.values():
        level = 0
        for _, delta in sorted(points, key=lambda p: (p[0], p[1])):  # an end before a start at the same ms
            level += delta
            most = max(most, level)
    return most




def parent_runs(target: Target, experiment: str) -> list[Run]:
    found = client(target).get_experiment_by_name(experiment)
    return client(target).search_runs([found.experiment_id], f"tags.`{ROLE_TAG}` = 'sweep'") if found else []


def steps_of(target: Target, run: Run, metric: str = "train_loss") -> list[int]:
    """The steps ``metric`` was logged at, in logging order (duplicates kept)."""
    return [m.step for m in client(target).get_metric_history(run.info.run_id, metric)]


def assert_each_trial_once(target: Target, experiment: str, num_samples: int, max_steps: int,
                           cut_short: frozenset[str] = frozenset()) -> list[Run]:
    """One FINISHED run per trial, none RUNNING, the parent FINISHED, and every dev step logged once, except in
    the ``cut_short`` trials (by trial id): they continued from their last checkpoint (or from scratch, without
    one), so the steps trained again after it may be logged twice."""
    runs = trial_runs(target, experiment)
    assert len(runs) == num_samples == len({r.data.tags[TRIAL_ID_TAG] for r in runs}), \
        [(r.data.tags.get(TRIAL_ID_TAG), r.info.status) for r in runs]
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * num_samples, \
        [(r.data.tags.get(TRIAL_ID_TAG), r.info.status, r.data.tags.get(REASON_TAG)) for r in runs]
    every = list(range(2, max_steps + 1, 2))
    for run in runs:
        steps = steps_of(target, run)
        if run.data.tags[TRIAL_ID_TAG] in cut_short:
            assert sorted(set(steps)) == every, (run.data.tags, steps)
        else:
            assert steps == every, (run.data.tags, steps)
    (parent,) = parent_runs(target, experiment)
    assert parent.info.status == "FINISHED", parent.data.tags
    return runs


def retrained_steps(target: Target, runs: list[Run]) -> int:
    """Dev steps logged more than once across ``runs`` (trained again after a checkpoint)."""
    return sum(len(steps) - len(set(steps)) for steps in (steps_of(target, run) for run in runs))
