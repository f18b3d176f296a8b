"""``sentsweep export RUN_ID`` of a best trial follows its tag to the sweep's ``best_model/``: one hop."""

from __future__ import annotations

import pytest
from mlflow import MlflowClient

from sentsweep.errors import ConfigError
from sentsweep.platform.report.export import export_run
from sentsweep.tracking.vocabulary import EXPORTED_MODEL_TAG


def test_runs_naming_each_other_end_in_one_line(tracking_uri, tmp_path) -> None:
    """Two runs whose tags name each other (anyone who may tag runs can write them) sent the
    export into a recursion without end (a RecursionError's traceback); now the named run is not followed further."""
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e")
    a, b = (client.create_run(experiment).info.run_id for _ in range(2))
    client.set_tag(a, EXPORTED_MODEL_TAG, f"runs:/{b}/best_model")
    client.set_tag(b, EXPORTED_MODEL_TAG, f"runs:/{a}/best_model")
    with pytest.raises(ConfigError, match=f"run {b} has no 'best/' or 'best_model/' artifact to export"):
        export_run(client, a, tmp_path / "out")
    assert not (tmp_path / "out").exists()
