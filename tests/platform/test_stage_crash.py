"""A driver killed in the confirmation stage before Tune saved the stage's first experiment state (Tune writes
``tuner.pkl`` as the stage's Tuner is built, its state only once the stage runs) leaves a stage a resume must still
run, not a Tune state it cannot restore (real Ray, Optuna, MLflow, the toy method)."""

from __future__ import annotations

import json
import shutil

import pytest
from mlflow import MlflowClient

from sentsweep.errors import ConfigError
from sentsweep.platform.confirm.stage import STAGE_DIR, STATE_FILE
from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, ROLE_TAG


@pytest.mark.slow
def test_a_stage_killed_before_its_first_snapshot_runs_on_resume(tmp_path, tiny_bert_dir, tracking_uri,
                                                                 ray_session) -> None:
    from sentsweep.platform.driver.sweep import resume_sweep, run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, scheduler={"type": "fifo"},
                        fixed={"max_steps": 2, "eval_every": 2}, confirm={"top_k": 1, "seeds": 1},
                        final_tasks="", export=False, plots=False)
    first = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False, echo=lambda line: None)
    assert first.confirmation is not None
    # what the kill left: the stage's state as it began, and of its Tune experiment only the Tuner's pickle
    folder = tmp_path / "ray_results" / first.sweep_dir.rsplit("/", 1)[1]
    state = {k: v for k, v in json.loads((folder / STATE_FILE).read_text()).items() if k not in ("winner", "chosen")}
    state["status"] = "running"
    (folder / STATE_FILE).write_text(json.dumps(state))
    stage = folder / STAGE_DIR
    for path in stage.iterdir():
        if path.name != "tuner.pkl":
            shutil.rmtree(path) if path.is_dir() else path.unlink()

    again = resume_sweep(first.sweep_dir, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                         echo=lambda line: None)
    assert again.confirmation is not None and len(again.confirmation.results) == 1
    assert again.confirmation.winner.interval.n == 1
    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([first.experiment_id], f"tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'")
    assert run.info.status == "FINISHED"
    assert client.get_run(first.parent_run_id).info.status == "FINISHED"

    # killed once the stage's trials ended, before the state said so: the saved stage is restored, not run again
    (folder / STATE_FILE).write_text(json.dumps(state))
    trials = sorted(p.name for p in stage.iterdir() if p.is_dir())
    last = resume_sweep(first.sweep_dir, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                        echo=lambda line: None)
    assert last.confirmation is not None and len(last.confirmation.results) == 1
    assert sorted(p.name for p in stage.iterdir() if p.is_dir()) == trials

    # the stage's snapshot cut short: one line naming it (Tune would run the stage again without its points)
    (folder / STATE_FILE).write_text(json.dumps(state))
    snapshot = max(stage.glob("experiment_state-*.json"))  # the newest: the one Tune restores
    snapshot.write_bytes(snapshot.read_bytes()[:100])
    with pytest.raises(ConfigError, match=f"{snapshot.name}: Ray Tune's experiment snapshot does not parse"):
        resume_sweep(first.sweep_dir, trainable=TOY_TRAINABLE, space=TOY_SPACE, preflight=False,
                     echo=lambda line: None)
