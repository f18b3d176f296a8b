"""A real Tune trial whose latest checkpoint is corrupt continues from the previous one, with a warning; the
trial's work folder lives in its own folder and is gone when the trial ends."""

from __future__ import annotations

import json
import re
from pathlib import Path

from mlflow import MlflowClient

from sentsweep.tracking.vocabulary import ROLE_TAG
from sentsweep.trainables.report_keys import EVALUATIONS_KEY
from sentsweep.trainables.restore_note import RESTORE_REASON_KEY, RESTORED_FROM_KEY


def test_a_corrupt_latest_checkpoint_falls_back_to_the_previous(tmp_path, tiny_bert_dir, tracking_uri,
                                                                ray_session, capsys) -> None:
    import ray

    from sentsweep.platform.driver.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    # checkpoints at steps 2 and 4; at step 5 the latest (step 4) is truncated and the trial crashes; Tune
    # retries it from that checkpoint, which the loop finds corrupt: it goes on from step 2
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"corrupt_at_step": 5}, max_failures=1, plots=False,
                        export=False, checkpoint={"num_to_keep": 2, "keep_trials": 1})
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)

    assert outcome.counts == {"finished": 1, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([outcome.experiment_id], f"tags.`{ROLE_TAG}` = 'trial'")
    (trial,) = [p for p in Path(outcome.sweep_dir).iterdir() if p.is_dir() and p.name.startswith("train_")]
    reports = [json.loads(line) for line in (trial / "result.json").read_text().splitlines() if line.strip()]
    evaluations = [r for r in reports if "train_loss" in r]
    steps = [int(r["step"]) for r in evaluations]
    assert steps == [2, 4, 4, 6], "the retry resumed at step 2 (the previous checkpoint), not at 4"
    # Tune continues from the iteration of the checkpoint it named; the trial counts from the one it restored
    assert [r["training_iteration"] for r in evaluations] == [1, 2, 3, 4]
    assert [r[EVALUATIONS_KEY] for r in evaluations] == [1, 2, 2, 3]
    assert [r.get(RESTORED_FROM_KEY) for r in evaluations] == [None, None, "checkpoint 2", None]
    reason = "checkpoint checkpoint_000001 is not usable (CorruptCheckpointError)"
    assert client.get_run(run.info.run_id).data.tags[RESTORED_FROM_KEY] == "checkpoint 2"
    assert client.get_run(run.info.run_id).data.tags[RESTORE_REASON_KEY] == reason
    printed = capsys.readouterr().out.splitlines()  # the trial by its label, as every table and plot names it
    assert f"trial t01 resumed from checkpoint 2 (not the checkpoint Tune named): {reason}" in printed
    # MLflow keeps one point per step: step 4, trained again, is not logged twice
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [2, 4, 6]
    session = Path(ray._private.worker.global_worker.node.get_session_dir_path())
    logs = "".join(p.read_text(errors="replace") for p in (session / "logs").glob("worker-*.out"))
    assert "WARNING: checkpoint checkpoint_000001 is not usable" in logs
    assert "falling back to the previous one" in logs
    assert not (trial / "work").exists()  # staged checkpoints lived in the trial folder, removed at the end


def test_retention_removes_what_a_lost_trial_left(tmp_path, tiny_bert_dir, tracking_uri, ray_session) -> None:
    """A folder Tune does not know (a trial started after a killed driver's last snapshot) loses its work folder
    and weights after the sweep; the sweep's own export stays."""
    from sentsweep.platform.driver.sweep import run_sweep
    from sentsweep.platform.folder.retention import prune_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=1, scheduler={"type": "fifo"},
                        plots=False, fixed={"max_steps": 2})
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=lambda line: None)
    lost = Path(outcome.sweep_dir) / "train_toy_lost"
    for name in ("work/checkpoint-0000002", "checkpoint_000000/model", "best"):
        (lost / name).mkdir(parents=True)
    (lost / "params.json").write_text("{}")
    lines: list[str] = []
    prune_sweep(outcome.results, config.metric, config.mode, 1, echo=lines.append, stage="confirmation")
    assert sorted(p.name for p in lost.iterdir()) == ["params.json"]
    assert len(lines) == 1 and re.fullmatch(r"confirmation stage: kept the best weights of 1 trial, removed the "
                                            r"weights of 0 and every checkpoint \(\d+\.\d MiB freed\)", lines[0])
    assert (Path(outcome.sweep_dir) / "best_model").is_dir()
    assert len(list(Path(outcome.sweep_dir).glob("train_toy_*/best"))) == 1
