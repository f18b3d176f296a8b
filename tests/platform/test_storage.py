"""Sweep folders: local paths and S3/MinIO URIs as Ray wants them, and the manifest that resumes a sweep."""

from __future__ import annotations

import pyarrow.fs
import pytest

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import SweepManifest, locate, new_sweep_location
from sentsweep.platform.search.study_store import load_study


def test_local_folder_round_trip(tmp_path):
    config = SweepConfig(name="demo", method="cosent", storage_path=str(tmp_path))
    location = new_sweep_location(config, now=0, suffix="ab12")
    assert location.name == f"demo-{location.name.split('-', 1)[1]}" and location.name.endswith("-ab12")
    assert location.filesystem is None and location.storage_path == str(tmp_path)
    manifest = SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                             parent_run_id="p", experiment_id="1", tracking_uri="sqlite:///x.db", created=0)
    location.write_manifest(manifest, config)
    again = locate(location.uri)
    assert again.read_manifest().sweep_config() == config
    assert set(again.list()) == {"sentsweep_sweep.json", "sweep.yaml"} and load_study(again) is None


def test_s3_with_a_minio_endpoint_uses_a_custom_filesystem():
    config = SweepConfig(name="s", method="cosent", storage_path="s3://bucket/sweeps",
                         storage_endpoint_url="http://127.0.0.1:9000")
    assert config.resolved().storage_path == "s3://bucket/sweeps"  # remote paths are left alone
    location = new_sweep_location(config, suffix="x")
    assert isinstance(location.filesystem, pyarrow.fs.S3FileSystem)
    assert location.storage_path == "bucket/sweeps"  # prefix-stripped, as Ray expects with a custom fs
    assert location.uri.startswith("s3://bucket/sweeps/s-")
    assert location.fs_path.startswith("bucket/sweeps/s-")


def test_bad_endpoint_and_missing_manifest(tmp_path):
    with pytest.raises(ConfigError, match="not a URL"):
        locate("s3://bucket/sweeps/s-1", "minio:9000")
    with pytest.raises(ConfigError, match="not a sentsweep sweep folder"):
        locate(str(tmp_path)).read_manifest()


def test_a_sweep_stored_before_tpe_gamma_resumes_with_the_split_it_ran_with():
    stored = SweepConfig(name="old", method="cosent").model_dump(mode="json")
    del stored["tpe_gamma"]  # written before the setting existed: Optuna's split
    old = SweepManifest(sweep_name="old", config=stored, parent_run_id="r", experiment_id="1", tracking_uri="x",
                        created=0.0)
    assert old.sweep_config().tpe_gamma == "optuna"
    new = old.model_copy(update={"config": {**stored, "tpe_gamma": "hyperopt"}})
    assert new.sweep_config().tpe_gamma == "hyperopt" and SweepConfig(name="n", method="cosent").tpe_gamma == "hyperopt"
