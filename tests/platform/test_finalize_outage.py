"""A tracking server that stops as the trials end: finalize (plots, the best trial's evaluation, the exported model,
its registration, the parent's end) neither crashes nor loses anything: what MLflow did not take is kept in the
sweep folder, and ``sentsweep sync`` delivers it all once the server is back (a real ``mlflow server``, stopped and
restarted; real Ray Tune with the toy method)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.cli import main
from sentsweep.platform.tracking.run_writes import PENDING_FILE, UPLOADS_DIR
from sentsweep.tracking.vocabulary import BEST_TRIAL_TAG, EXPORTED_MODEL_TAG, PARENT_TAG, STATUS_TAG, TRIAL_ID_TAG
from tests.tracking.restartable_mlflow import outage_ready_server


@pytest.fixture
def server(tmp_path, mlflow_template):
    with outage_ready_server(tmp_path, mlflow_template) as found:
        yield found


@pytest.mark.slow
def test_finalize_in_an_outage_is_delivered_by_sync(tmp_path, tiny_bert_dir, server, ray_session, capsys):
    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, server.uri, num_samples=2, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, tracking={"artifact_location": None},
                        fixed={"max_steps": 2}, register_model="toy-outage")
    lines: list[str] = []

    def echo(line: str) -> None:  # the server goes down as the trials have ended, before finalize starts
        lines.append(line)
        if " done in " in line:
            server.stop()

    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=echo)

    assert outcome.counts["finished"] == 2 and outcome.best_trial_id and outcome.final_metrics
    assert outcome.model_version is None and any("is registered once MLflow answers" in line for line in lines)
    uploads = Path(outcome.sweep_dir) / UPLOADS_DIR
    assert {p.name for p in uploads.iterdir()} >= {"plots", "best_eval", "best_model"}
    saved = [w["op"] for w in json.loads((Path(outcome.sweep_dir) / PENDING_FILE).read_text())]
    assert {"artifacts", "register", "status"} <= set(saved)

    server.start()
    capsys.readouterr()
    assert main(["sync", outcome.sweep_dir]) == 0
    assert "holds the sweep folder" in capsys.readouterr().out
    assert not (Path(outcome.sweep_dir) / PENDING_FILE).exists()  # everything delivered

    client = MlflowClient(tracking_uri=server.uri)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.info.status == "FINISHED" and parent.data.tags[STATUS_TAG] == "finished"
    assert parent.data.tags[BEST_TRIAL_TAG] == outcome.best_trial_id
    assert "final_stsb_test" in parent.data.metrics and "best_stsb_dev" in parent.data.metrics
    assert {"plots", "best_eval", "best_model"} <= {f.path for f in client.list_artifacts(parent.info.run_id)}
    (version,) = client.search_model_versions("name = 'toy-outage'")
    assert version.run_id == parent.info.run_id
    trials = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{parent.info.run_id}'")
    assert sorted(r.info.status for r in trials) == ["FINISHED", "FINISHED"]
    best = next(r for r in trials if r.data.tags[TRIAL_ID_TAG] == outcome.best_trial_id)
    assert best.data.tags[EXPORTED_MODEL_TAG] == f"runs:/{parent.info.run_id}/best_model"
    for run in [parent, *trials]:
        for key in run.data.metrics:
            history = client.get_metric_history(run.info.run_id, key)
            assert max(Counter((m.step, m.timestamp, m.value) for m in history).values()) == 1
    assert main(["sync", outcome.sweep_dir]) == 0  # again: nothing twice
    assert len(client.search_model_versions("name = 'toy-outage'")) == 1


def test_sync_delivers_an_upload_and_refuses_a_folder_without_a_sweep(tmp_path, tiny_bert_dir, tracking_uri,
                                                                       capsys):
    from sentsweep.platform.location import SweepManifest, new_sweep_location
    from sentsweep.platform.tracking.parent_run import SweepRun
    from tests.platform.sweep_toy import TOY_SPACE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri).resolved()
    location = new_sweep_location(config, suffix="sync")
    sweep = SweepRun.open(config, location.name, location.uri, TOY_SPACE.define_by_run, TOY_SPACE.first_point)
    location.write_manifest(SweepManifest(sweep_name=location.name, config=config.model_dump(mode="json"),
                                          parent_run_id=sweep.run_id, experiment_id=sweep.experiment_id,
                                          tracking_uri=sweep.tracking_uri, created=0.0), config)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("kept")
    sweep.log_artifacts(tmp_path / "notes", "notes")
    assert sweep.flush(30.0)  # delivered at once
    assert (tmp_path / "notes" / "a.txt").is_file()  # a copy was kept, not the folder itself
    assert (Path(location.uri) / UPLOADS_DIR / "notes" / "a.txt").is_file()
    assert [f.path for f in MlflowClient(tracking_uri=tracking_uri).list_artifacts(sweep.run_id, "notes")] == [
        "notes/a.txt"]
    capsys.readouterr()
    assert main(["sync", location.uri]) == 0
    assert "holds the sweep folder" in capsys.readouterr().out
    assert main(["sync", str(tmp_path / "notes")]) == 2
    err = capsys.readouterr().err
    assert "not a sentsweep sweep folder" in err and err.count("\n") == 1
