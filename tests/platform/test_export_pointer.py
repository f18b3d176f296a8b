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


def test_a_winner_without_a_sentence_transformers_form_says_where_its_weights_go(tmp_path) -> None:
    """A multi-view winner cannot be exported: the sweep's line gives the reason without the trial folder's path
    or a field the config never set, and names the trial run that gets the weights and how to skip the step."""
    from sentsweep.platform.driver.finalize import export_skipped_line
    from sentsweep.platform.report.export import export_sentence_transformer

    weights = tmp_path / "train_multiview_ab12" / "best"
    weights.mkdir(parents=True)
    (weights / "multiview.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        export_sentence_transformer(weights, tmp_path / "out")
    line = export_skipped_line(err.value, "t03")
    assert line.startswith("not exported: a multi-view model") and "\n" not in line
    assert str(tmp_path) not in line and "field 'method'" not in line
    assert "trial t03 under best/" in line and "export: false" in line


def test_exporting_a_run_without_a_sentence_transformers_form_names_the_run(tracking_uri, tmp_path) -> None:
    """``sentsweep export`` of a multi-view trial run: one line naming the run and how to fetch its weights, never
    the temporary folder the weights were downloaded to, and no destination folder made."""
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "artifacts").as_uri())
    run = client.create_run(experiment).info.run_id
    weights = tmp_path / "best"
    weights.mkdir()
    (weights / "multiview.json").write_text("{}", encoding="utf-8")
    client.log_artifacts(run, str(weights), "best")
    with pytest.raises(ConfigError) as err:
        export_run(client, run, tmp_path / "out")
    message = str(err.value)
    assert message.startswith(f"run {run}: a multi-view model") and "\n" not in message
    assert f"mlflow artifacts download -r {run} -a best" in message and "/tmp" not in message.replace(str(run), "")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("dest", ["a-file", "a-file/model"])
def test_a_destination_in_the_way_of_a_file_is_one_line_and_the_file_stays(tracking_uri, tmp_path, dest) -> None:
    """A destination that is a file, or lies under one, is a mistake of the command line: one line naming the
    destination (not an unexpected error), and the file is untouched."""
    client = MlflowClient(tracking_uri=tracking_uri)
    run = client.create_run(client.create_experiment("e")).info.run_id
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    client.log_artifacts(run, str(model), "best_model")
    (tmp_path / "a-file").write_text("keep", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a folder") as err:
        export_run(client, run, tmp_path / dest, overwrite=True)
    assert err.value.field == "DEST" and err.value.file == str(tmp_path / dest)
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "keep"
