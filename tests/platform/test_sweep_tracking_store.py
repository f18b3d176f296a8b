"""The tracking store a sweep needs: a fresh sqlite file initialised once when two sweeps start together, and
sqlite refused on a multi-node Ray cluster with one line naming ``mlflow server``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.errors import ConfigError
from sentsweep.platform.tracking.store import is_remote_address, refuse_sqlite_on_cluster
from sentsweep.tracking.vocabulary import ROLE_TAG
from tools.harness.processes import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]
# Each sweep is a process of its own, with its own local Ray: what two users starting sweeps at once do.
DRIVER = """
import sys
import ray
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.sweep import run_sweep
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE

ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="WARNING")
config = SweepConfig.model_validate_json(open(sys.argv[1]).read())
outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False)
print("COUNTS", outcome.counts)
"""


@pytest.mark.cluster  # a sweep in a process of its own, with its own Ray: run by make test-cluster (CI runs both)
def test_two_sweeps_started_together_on_a_fresh_sqlite_file(tmp_path, tiny_bert_dir):
    from tests.platform.sweep_toy import toy_config

    database = tmp_path / "fresh" / "mlruns.db"  # no schema yet: the first MLflow client creates it
    uri = f"sqlite:///{database}"
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env["PYTHONPATH"] = repo_pythonpath()
    drivers = []
    for name in ("one", "two"):
        folder = tmp_path / name
        folder.mkdir()
        config = toy_config(folder, tiny_bert_dir, uri, num_samples=1, max_concurrent_trials=1,
                            scheduler={"type": "fifo"}, fixed={"max_steps": 2}).resolved()
        (folder / "config.json").write_text(config.model_dump_json())
        log = (folder / "driver.log").open("w")
        drivers.append((subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(folder / "config.json")],
                                         stdout=log, stderr=subprocess.STDOUT, env=env), folder))
    for driver, folder in drivers:
        try:
            driver.wait(timeout=300)
        finally:
            if driver.poll() is None:
                driver.kill()
        output = (folder / "driver.log").read_text()
        assert driver.returncode == 0, output[-4000:]
        assert "COUNTS {'finished': 1, 'pruned': 0, 'stopped': 0, 'not started': 0, 'failed': 0}" in output
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("toy")
    sweeps = client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'sweep'")
    assert len(sweeps) == 2 and all(r.info.status == "FINISHED" for r in sweeps)


def test_sqlite_on_a_remote_cluster_is_refused():
    with pytest.raises(ConfigError, match="mlflow server") as caught:
        refuse_sqlite_on_cluster("sqlite:///mlruns.db", "ray://10.1.2.3:10001")
    assert "tracking.uri" in str(caught.value) and "\n" not in str(caught.value)
    refuse_sqlite_on_cluster("http://mlflow:5000", "ray://10.1.2.3:10001")  # a server is what a cluster needs
    assert is_remote_address("10.1.2.3:6379") and not is_remote_address("127.0.0.1:6379")
    assert not is_remote_address(None) and not is_remote_address("local") and not is_remote_address("auto")


def test_sqlite_with_a_local_ray_is_fine_as_only_the_driver_writes():
    refuse_sqlite_on_cluster("sqlite:///mlruns.db", None)
    refuse_sqlite_on_cluster("sqlite:///mlruns.db", "127.0.0.1:6379")  # a local Ray of several nodes


def test_sqlite_with_a_remote_cluster_is_refused_before_anything_is_created(tmp_path, tiny_bert_dir):
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    config = toy_config(tmp_path, tiny_bert_dir, uri)
    with pytest.raises(ConfigError, match="tracking.uri"):
        run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, address="ray://10.1.2.3:10001",
                  echo=lambda line: None)
    assert not (tmp_path / "ray_results").exists() and not (tmp_path / "mlruns.db").exists()
