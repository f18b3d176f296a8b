"""Finalize's pruning keeps the weights it used: the confirmation stage's chosen seed, even when it is the top
trial of neither stage; and it prunes nothing while uploads wait for MLflow in the driver's journals (real
trial folders, real Tune results and checkpoints, real journals; no Ray session needed), leaving the pruning to
``sentsweep sync`` once it has delivered them (a real toy sweep in the session's Ray)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient
from ray.tune import Checkpoint, Result

from sentsweep.platform.confirmation import ConfirmationOutcome
from sentsweep.platform.confirmation_stats import Candidate, SeedRun
from sentsweep.platform.finalize import prune_stages
from sentsweep.platform.outcome import SweepOutcome
from sentsweep.platform.retention import PRUNE_OWED, rank_results
from sentsweep.platform.search import FINAL_KEY
from sentsweep.platform.storage import SweepLocation
from sentsweep.platform.sweep_tracking import SweepRun
from sentsweep.platform.tracking_journals import Replayed
from sentsweep.tracking.journal import DRIVER_JOURNALS, PARENT_JOURNAL, Journal, JournalState
from sentsweep.tracking.vocabulary import TRIAL_ID_TAG
from sentsweep.trainables.checkpoints import BEST_DIR, CHECKPOINT_MARKER, BestFolder, StoredFolder
from tests.platform.sweep_toy import toy_config

#: search trials and confirmation trials with their dev values; the chosen seed is neither stage's best
SEARCH = {"s1": 80.0, "s2": 78.0, "s3": 75.0}
STAGE = {"c1": 79.0, "c2": 77.0, "c3": 76.0}
CHOSEN = "c2"


def make_trial(folder: Path, trial_id: str, metric: str, value: float) -> Result:
    """A finished trial's folder (complete ``best/``, one checkpoint whose weights are not the best) and its
    Tune result."""
    weights = folder / "source"
    weights.mkdir(parents=True)
    (weights / "model.safetensors").write_bytes(trial_id.encode() * 64)
    BestFolder(StoredFolder.local(folder / BEST_DIR)).keep(StoredFolder.local(weights), 4, value)
    checkpoint = folder / "checkpoint_000001"
    (checkpoint / "model").mkdir(parents=True)
    (checkpoint / "state.pt").write_bytes(b"optimizer" * 32)
    (checkpoint / CHECKPOINT_MARKER).write_text(json.dumps({"step": 6, "best_step": 4, "best_value": value,
                                                            "weights_are_best": False}))
    return Result(metrics={"trial_id": trial_id, metric: value, FINAL_KEY: 1.0}, checkpoint=Checkpoint(checkpoint),
                  error=None, path=str(folder), _storage_filesystem=pyarrow.fs.LocalFileSystem())


@pytest.fixture
def finished(tmp_path, tracking_uri):
    """A sweep folder with a search and a confirmation stage whose chosen seed is ``CHOSEN``; the config, the
    outcome finalize filled in, the location and the sweep's run (its journals in the sweep folder)."""
    config = toy_config(tmp_path, tmp_path, tracking_uri, checkpoint={"keep_trials": 1})
    root = tmp_path / "ray_results" / "toy-1"
    search = [make_trial(root / f"train_{t}", t, config.metric, v) for t, v in SEARCH.items()]
    stage = [make_trial(root / "confirmation" / f"train_{t}", t, config.metric, v) for t, v in STAGE.items()]
    chosen = SeedRun(CHOSEN, seed=2, value=STAGE[CHOSEN])
    winner = Candidate(rank=2, trial_id="s2", params={}, runs=[SeedRun("s2", 1, SEARCH["s2"], True), chosen])
    confirmation = ConfirmationOutcome("stage-run", "lower_bound", [winner], winner, chosen, results=stage)
    outcome = SweepOutcome("toy-1", str(root), "parent", "0", tracking_uri, {"finished": 3}, 1.0,
                           best_trial_id=CHOSEN, results=search, confirmation=confirmation)
    location = SweepLocation(str(root.parent), root.name, None, str(root))
    sweep = SweepRun(MlflowClient(tracking_uri=tracking_uri), tracking_uri, "0", "parent", "toy-1",
                     root / DRIVER_JOURNALS)
    return config, outcome, location, sweep


def with_best(root: Path) -> set[str]:
    """The trials (folder name less ``train_``) that still hold a complete ``best/`` folder."""
    return {p.parent.name.removeprefix("train_") for p in root.glob("**/train_*/best")
            if BestFolder(StoredFolder.local(p)).marker() is not None}


def test_the_chosen_seed_keeps_its_weights_when_it_is_no_stage_best(finished):
    config, outcome, location, sweep = finished
    root = Path(outcome.sweep_dir)
    lines: list[str] = []

    prune_stages(outcome, config, location, sweep, echo=lines.append)

    assert CHOSEN in with_best(root), "the weights finalize evaluated and exported were pruned"
    assert with_best(root) == {"s1", "c1", CHOSEN}  # keep_trials=1 per stage, plus the chosen seed
    assert not list(root.glob("**/checkpoint_*"))
    assert len(lines) == 2 and all("removed the weights" in line for line in lines)


def test_nothing_is_pruned_while_uploads_wait_for_mlflow(finished):
    config, outcome, location, sweep = finished
    root = Path(outcome.sweep_dir)
    staged = root / DRIVER_JOURNALS / "staged" / "best_model-1"
    staged.mkdir(parents=True)
    journal = Journal(root / DRIVER_JOURNALS / PARENT_JOURNAL, run_id="parent")
    journal.append({"op": "metrics", "points": []})
    journal.append({"op": "artifacts", "dir": str(staged), "path": "best_model", "remove": True})
    lines: list[str] = []

    prune_stages(outcome, config, location, sweep, echo=lines.append)

    assert lines == [f"not pruned: 1 upload(s) wait for MLflow (`sentsweep sync {root}` delivers them, then "
                     "prunes); every trial keeps its weights"]
    assert with_best(root) == set(SEARCH) | set(STAGE)
    assert len(list(root.glob("**/checkpoint_*"))) == len(SEARCH) + len(STAGE)

    assert json.loads((root / PRUNE_OWED).read_text()) == {  # what sync prunes once it has delivered them
        "stages": ["", "confirmation"], "metric": config.metric, "mode": config.mode, "keep_trials": 1,
        "keep": [CHOSEN]}

    journal.save_state(JournalState(delivered=2, run_id="parent"))  # delivered: the next pruning goes ahead
    prune_stages(outcome, config, location, sweep, echo=lines.append)
    assert with_best(root) == {"s1", "c1", CHOSEN}
    assert not (root / PRUNE_OWED).exists()  # this finalize pruned: nothing is owed any more


def test_sync_prunes_what_finalize_left_for_it(tmp_path, tiny_bert_dir, tracking_uri, ray_session, private_cache):
    """A real sweep of three trials whose finalize found an upload waiting for MLflow (a trial's ``best/``, its
    tracking URI on a closed port): ``sentsweep sync`` delivers it, then prunes as finalize would have, the trial
    finalize used (not the top one) keeping its weights."""
    from sentsweep.platform.sweep import run_sweep
    from sentsweep.platform.tracking_journals import sync_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE
    from tests.tracking.restartable_mlflow import RETRY_ENV
    from tools.harness.processes import LOOPBACK, free_port

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=3, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, plots=False, export=False, fixed={"max_steps": 4},
                        checkpoint={"num_to_keep": 2, "keep_trials": 1, "trim_ended_after_s": None})
    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, echo=lambda line: None)
    root = Path(outcome.sweep_dir)
    ranked = [str(r.metrics["trial_id"]) for r in rank_results(outcome.results, config.metric, config.mode)]
    outcome.best_trial_id = ranked[1]  # e.g. a confirmation stage's choice: not the top trial
    folders = {str(r.metrics["trial_id"]): Path(r.path).name.removeprefix("train_") for r in outcome.results}
    assert with_best(root) == set(folders.values()) and len(list(root.glob("*/checkpoint_*"))) >= 3

    down = f"http://{LOOPBACK}:{free_port()}"  # MLflow does not answer the driver
    with pytest.MonkeyPatch.context() as patch:
        for key, value in RETRY_ENV.items():
            patch.setenv(key, value)
        driver = SweepRun(MlflowClient(tracking_uri=down), down, outcome.experiment_id, outcome.parent_run_id,
                          outcome.sweep_name, root / DRIVER_JOURNALS)
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "a.txt").write_text("an upload")
        assert not driver.to_trial(ranked[1], driver.staged(tmp_path / "notes", "notes"))
        location = SweepLocation(str(root.parent), root.name, None, str(root))
        lines: list[str] = []
        prune_stages(outcome, config, location, driver, echo=lines.append)
    assert lines[0].startswith("not pruned: 1 upload(s) wait") and (root / PRUNE_OWED).is_file()

    lines.clear()
    assert sync_sweep(str(root), echo=lines.append) == (Replayed(), tracking_uri)

    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([outcome.experiment_id], f"tags.`{TRIAL_ID_TAG}` = '{ranked[1]}'")
    assert [f.path for f in client.list_artifacts(run.info.run_id, "notes")] == ["notes/a.txt"]
    assert with_best(root) == {folders[ranked[0]], folders[ranked[1]]}  # keep_trials=1, plus the one finalize used
    assert not list(root.glob("*/checkpoint_*"))
    assert len(lines) == 1 and "removed the weights of 1" in lines[0]
    assert not (root / PRUNE_OWED).exists()
    assert sync_sweep(str(root), echo=lines.append) == (Replayed(), tracking_uri) and len(lines) == 1  # owed once
