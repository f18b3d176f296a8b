"""Fixtures of the platform tests: one Ray instance per session, a migrated MLflow sqlite database to copy,
and a small toy sweep config (real Ray, real MLflow, a tiny random BERT)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
# Ray workers import the toy trainable (sweep_toy) by module name; workers inherit this environment.
# (pytest runs with --import-mode=importlib, so this folder is put on sys.path here, for the driver).
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")


@pytest.fixture(scope="session")
def ray_session() -> Iterator[None]:
    """Ray on this machine's two cores, started once for every platform test."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def mlflow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An MLflow sqlite database with its schema created (creating one takes ~10 s; copying, none)."""
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlruns.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def tracking_uri(tmp_path: Path, mlflow_template: Path) -> str:
    """A fresh sqlite tracking store for one test."""
    path = tmp_path / "mlruns.db"
    shutil.copy(mlflow_template, path)
    return f"sqlite:///{path}"


def toy_config(tmp_path: Path, model: Path, tracking_uri: str, **overrides: Any):
    """A small toy sweep: 4 trials of 6 steps, dev evaluation every 2 steps, ASHA, 2 concurrent."""
    from sentsweep.platform.config import SweepConfig

    raw: dict[str, Any] = {
        "name": "toy", "method": "toy", "search_space": "toy", "num_samples": 4, "max_concurrent_trials": 2,
        "scheduler": {"type": "asha", "grace_period": 1, "reduction_factor": 2},
        "fixed": {"model": str(model), "max_steps": 6, "eval_every": 2, "batch_size": 16,
                  "max_dev_pairs": 40, "test_tasks": "stsb_test", "warmup_ratio": 0.0},
        "storage_path": str(tmp_path / "ray_results"), "seed": 3, "startup_trials": 2,
        "tracking": {"uri": tracking_uri, "artifact_location": str(tmp_path / "mlartifacts"),
                     "experiment": "toy"},
        "final_tasks": "stsb_test", "max_failures": 0, "checkpoint": {"num_to_keep": 2},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return SweepConfig.model_validate(raw)


@pytest.fixture(scope="session")
def toy_sweep(tmp_path_factory: pytest.TempPathFactory, tiny_bert_dir: Path, mlflow_template: Path,
              ray_session: None) -> Any:
    """One faulty toy sweep shared by the tests that read its results (see ``sweep_toy.FAULTS``).

    Five trials, one at a time (so ASHA's decisions do not depend on timing): trial 0 finishes, 1 raises,
    2 has a NaN loss, 3 and 4 are pruned; then the best trial is evaluated, plotted, exported and
    registered as ``toy-best``.
    """
    from sweep_toy import FAULTY_SPACE, TOY_TRAINABLE

    from sentsweep.platform.sweep import run_sweep

    root = tmp_path_factory.mktemp("toy-sweep")
    shutil.copy(mlflow_template, root / "mlruns.db")
    config = toy_config(root, tiny_bert_dir, f"sqlite:///{root / 'mlruns.db'}", num_samples=5,
                        max_concurrent_trials=1, search_space="toy-faulty", register_model="toy-best")
    lines: list[str] = []
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=FAULTY_SPACE, echo=lines.append)
    outcome.log = lines
    return outcome
