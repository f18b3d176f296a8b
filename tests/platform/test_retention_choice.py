"""Finalize's pruning keeps the weights it used: the confirmation stage's chosen seed, even when it is the top
trial of neither stage; and it prunes nothing while uploads wait for MLflow in the driver's journals (real
trial folders, real Tune results and checkpoints, real journals; no Ray session needed)."""

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
from sentsweep.platform.search import FINAL_KEY
from sentsweep.platform.storage import SweepLocation
from sentsweep.platform.sweep_tracking import SweepRun
from sentsweep.tracking.journal import DRIVER_JOURNALS, PARENT_JOURNAL, Journal, JournalState
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

    assert lines == [f"not pruned: 1 upload(s) wait for MLflow (`sentsweep sync {root}` delivers them); "
                     "every trial keeps its weights"]
    assert with_best(root) == set(SEARCH) | set(STAGE)
    assert len(list(root.glob("**/checkpoint_*"))) == len(SEARCH) + len(STAGE)

    journal.save_state(JournalState(delivered=2, run_id="parent"))  # delivered: the next pruning goes ahead
    prune_stages(outcome, config, location, sweep, echo=lines.append)
    assert with_best(root) == {"s1", "c1", CHOSEN}
