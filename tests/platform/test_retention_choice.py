"""Finalize's pruning keeps the weights it used: the confirmation stage's chosen seed, even when it is the top
trial of neither stage; and it never waits for MLflow: an upload that waits is a copy in the sweep folder (real
trial folders, real Tune results and checkpoints; no Ray session needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.fs
import pytest
from mlflow import MlflowClient
from ray.tune import Checkpoint, Result

from sentsweep.platform.driver.finalize import prune_stages
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.outcome import Candidate, ConfirmationOutcome, SeedRun, SweepOutcome
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.run_writes import PENDING_FILE, UPLOADS_DIR
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
    outcome finalize filled in, the location and the sweep's run."""
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
                     pyarrow.fs.LocalFileSystem(), str(root))
    return config, outcome, location, sweep


def with_best(root: Path) -> set[str]:
    """The trials (folder name less ``train_``) that still hold a complete ``best/`` folder."""
    return {p.parent.name.removeprefix("train_") for p in root.glob("**/train_*/best")
            if BestFolder(StoredFolder.local(p)).marker() is not None}


def test_the_chosen_seed_keeps_its_weights_when_it_is_no_stage_best(finished):
    config, outcome, location, sweep = finished
    root = Path(outcome.sweep_dir)
    lines: list[str] = []

    prune_stages(outcome, config, echo=lines.append)

    assert CHOSEN in with_best(root), "the weights finalize evaluated and exported were pruned"
    assert with_best(root) == {"s1", "c1", CHOSEN}  # keep_trials=1 per stage, plus the chosen seed
    assert not list(root.glob("**/checkpoint_*"))
    assert len(lines) == 2 and all("removed the weights" in line for line in lines)


def test_pruning_does_not_wait_for_mlflow_and_keeps_what_waits_to_be_uploaded(finished, tmp_path, monkeypatch):
    """An upload of a trial's ``best/`` that MLflow has not taken (it does not answer) is a copy in the sweep
    folder's ``uploads/``: the pruning goes ahead at once and leaves that copy for a resume or ``sync``."""
    from tests.tracking.restartable_mlflow import RETRY_ENV
    from tools.harness.processes import LOOPBACK, free_port

    config, outcome, location, _ = finished
    for key, value in RETRY_ENV.items():
        monkeypatch.setenv(key, value)
    root = Path(outcome.sweep_dir)
    down = f"http://{LOOPBACK}:{free_port()}"
    driver = SweepRun(MlflowClient(tracking_uri=down), down, "0", "parent", "toy-1", pyarrow.fs.LocalFileSystem(),
                      str(root))
    driver.upload_to_trial("s3", root / "train_s3" / BEST_DIR, BEST_DIR)  # a trial the pruning strips
    lines: list[str] = []

    prune_stages(outcome, config, echo=lines.append)
    assert driver.flush(5.0) is False  # MLflow did not take it: saved for later

    assert with_best(root) == {"s1", "c1", CHOSEN} and not list(root.glob("**/checkpoint_*"))
    kept = root / UPLOADS_DIR / "trials" / "s3" / BEST_DIR
    assert BestFolder(StoredFolder.local(kept)).marker() is not None, "the upload's copy was pruned"
    (saved,) = json.loads((root / PENDING_FILE).read_text())
    assert saved == {"op": "artifacts", "parent": "parent", "trial": "s3", "dir": f"{UPLOADS_DIR}/trials/s3/best",
                     "path": BEST_DIR}
