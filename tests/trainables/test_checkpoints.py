"""Checkpoints hold what resume needs once; the best weights are kept once; cadence; corrupt-latest fallback."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from sentsweep.trainables.checkpoints import (
    BEST_MARKER,
    CHECKPOINT_MARKER,
    MODEL_DIR,
    STATE_FILE,
    BestFolder,
    CheckpointUnreadableError,
    CorruptCheckpointError,
    StoredFolder,
    check_checkpoint,
    checkpoint_weights,
    pick_best,
    write_checkpoint_marker,
)
from sentsweep.trainables.loop import TrainingLoop
from tests.trainables.test_loop import RegressionTask, _config


class WideTask(RegressionTask):
    """The regression task with a 256x256 layer, so that bytes are dominated by tensors as in a real model."""

    def __init__(self) -> None:
        super().__init__()
        self.x = torch.randn(64, 256)
        self.y = self.x @ torch.randn(256, 1)
        self.model = nn.Sequential(nn.Dropout(0.2), nn.Linear(256, 256), nn.Linear(256, 1))


def _persist_like_tune(store: Path):
    """A report that copies each checkpoint to ``store`` (as Tune does) and returns where it lives."""
    persisted: dict[int, Path] = {}

    def report(metrics: dict, checkpoint: Path | None) -> StoredFolder | None:
        if checkpoint is None:
            return None
        target = store / f"checkpoint_{len(persisted):06d}"
        shutil.copytree(checkpoint, target)
        persisted[int(metrics["step"])] = target
        return StoredFolder.local(target)

    return report, persisted


def _tensor_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def test_a_checkpoint_holds_weights_and_adam_state_once(tmp_path: Path) -> None:
    report, persisted = _persist_like_tune(tmp_path / "trial")
    task = WideTask()
    TrainingLoop(task, _config(), report=report, best=BestFolder(StoredFolder.local(tmp_path / "trial" / "best")),
                 work_dir=tmp_path / "work").run()
    checkpoint = persisted[12]
    assert sorted(p.name for p in checkpoint.iterdir()) == [CHECKPOINT_MARKER, MODEL_DIR, STATE_FILE]
    written = sum(f.stat().st_size for f in checkpoint.rglob("*") if f.is_file())
    reference = 3 * _tensor_bytes(task.model)  # weights + Adam's two moments
    assert written <= 1.05 * reference, written / reference
    # everything loads without the unpickler that runs code
    blob = torch.load(checkpoint / STATE_FILE, weights_only=True)
    assert set(blob) == {"optimizer", "scheduler", "scaler", "rng", "loop", "config"}


def test_the_best_weights_are_kept_once_as_links_to_the_persisted_checkpoint(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    report, persisted = _persist_like_tune(trial)
    best = BestFolder(StoredFolder.local(trial / "best"))
    result = TrainingLoop(RegressionTask(), _config(), report=report, best=best, work_dir=tmp_path / "work").run()
    assert result.state.best_step == 8
    assert best.marker()["step"] == 8
    kept, source = trial / "best" / "w.safetensors", persisted[8] / MODEL_DIR / "w.safetensors"
    assert kept.stat().st_ino == source.stat().st_ino  # a hard link: no second copy of the bytes
    # checkpoints written after the best one point at it instead of carrying a copy
    assert not (persisted[12] / "best").exists()
    assert checkpoint_weights(persisted[12]) == trial / "best"
    assert checkpoint_weights(persisted[8]) in (trial / "best", persisted[8] / MODEL_DIR)


def test_checkpoint_cadence_and_best_weights_between_checkpoints(tmp_path: Path) -> None:
    trial = tmp_path / "trial"
    report, persisted = _persist_like_tune(trial)
    best = BestFolder(StoredFolder.local(trial / "best"))
    reports: list[tuple[int, bool]] = []

    def spy(metrics: dict, checkpoint: Path | None) -> StoredFolder | None:
        reports.append((int(metrics["step"]), checkpoint is not None))
        return report(metrics, checkpoint)

    task = RegressionTask()
    result = TrainingLoop(task, _config(checkpoint_every=4), report=spy, best=best, work_dir=tmp_path / "w").run()
    # evaluations at 2..12; a checkpoint every 4th evaluation (step 8) and at the last (step 12)
    assert reports == [(2, False), (4, False), (6, False), (8, True), (10, False), (12, True)]
    assert sorted(persisted) == [8, 12]
    # the best (step 8 here) is recoverable: the best folder holds it, the last checkpoint points there
    assert best.marker()["step"] == result.state.best_step == 8
    assert torch.equal(load_file(str(trial / "best" / "w.safetensors"))["1.weight"], task.model[1].weight.detach())


def test_an_improvement_without_a_checkpoint_goes_to_the_best_folder_alone(tmp_path: Path) -> None:
    best = BestFolder(StoredFolder.local(tmp_path / "best"))
    task = RegressionTask()
    task.dev_scores = [1.0, 3.0, 2.0, 2.0, 2.0, 2.0]  # best at step 4, an evaluation without a checkpoint
    TrainingLoop(task, _config(checkpoint_every=6), report=lambda m, c: None, best=best,
                 work_dir=tmp_path / "w").run()
    assert best.marker()["step"] == 4
    assert sorted(p.name for p in (tmp_path / "best").iterdir()) == [BEST_MARKER, "w.safetensors"]


@pytest.mark.parametrize("damage", ["truncate_state", "truncate_weights", "no_marker"])
def test_a_corrupt_latest_checkpoint_falls_back_to_the_previous(tmp_path: Path, damage: str) -> None:
    trial = tmp_path / "trial"
    report, persisted = _persist_like_tune(trial)
    best = BestFolder(StoredFolder.local(trial / "best"))
    TrainingLoop(RegressionTask(), _config(), report=report, best=best, work_dir=tmp_path / "a").run()
    latest, previous = persisted[10], persisted[8]
    if damage == "truncate_state":
        path = latest / STATE_FILE
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "truncate_weights":
        path = latest / MODEL_DIR / "w.safetensors"
        path.write_bytes(path.read_bytes()[:20])
    else:
        (latest / CHECKPOINT_MARKER).unlink()
    with pytest.raises(CorruptCheckpointError):
        check_checkpoint(latest)
    lines: list[str] = []
    resumed = RegressionTask()
    resumed.calls = 8
    seen: list[int] = []
    loop = TrainingLoop(resumed, _config(), report=lambda m, c: seen.append(int(m["step"])), log=lines.append,
                        best=best, work_dir=tmp_path / "b")
    result = loop.run(resume_from=[StoredFolder.local(latest), StoredFolder.local(previous)])
    assert seen == [10, 12], "continued from the previous checkpoint (step 8)"
    assert any(line.startswith("WARNING: checkpoint checkpoint_000004 is not usable") for line in lines), lines
    assert result.state.best_step == 8 and result.state.best_value == 5.0


def test_no_usable_checkpoint_starts_from_the_beginning_with_a_warning(tmp_path: Path) -> None:
    lines: list[str] = []
    seen: list[int] = []
    loop = TrainingLoop(RegressionTask(), _config(), report=lambda m, c: seen.append(int(m["step"])),
                        log=lines.append, work_dir=tmp_path / "w")
    loop.run(resume_from=[StoredFolder.local(tmp_path / "checkpoint_000003")])
    assert seen[0] == 2 and any("starting from the beginning" in line for line in lines)


def test_a_checkpoint_that_fails_after_its_weights_loaded_leaves_nothing_behind(tmp_path: Path) -> None:
    """Weights, optimizer and position load, then the RNG state does not: the start from the beginning is clean."""
    report, persisted = _persist_like_tune(tmp_path / "trial")
    TrainingLoop(RegressionTask(), _config(), report=report, work_dir=tmp_path / "a").run()
    damaged = persisted[10]
    blob = torch.load(damaged / STATE_FILE, weights_only=True)
    blob["rng"]["torch"] = torch.zeros(3, dtype=torch.uint8)  # loads, but torch.set_rng_state refuses it
    torch.save(blob, damaged / STATE_FILE)
    write_checkpoint_marker(damaged, 10, 8, 5.0)  # the marker agrees: only the content is bad
    fresh, resumed = RegressionTask(), RegressionTask()
    first_weights = {k: v.clone() for k, v in resumed.model.state_dict().items()}
    expected: list[dict] = []
    never_restored = TrainingLoop(fresh, _config(), report=lambda m, c: expected.append(m), work_dir=tmp_path / "b")
    torch.manual_seed(1)
    never_restored.run()
    lines: list[str] = []
    seen: list[dict] = []
    loop = TrainingLoop(resumed, _config(), report=lambda m, c: seen.append(m), log=lines.append,
                        work_dir=tmp_path / "c")
    loop.restore([StoredFolder.local(damaged)])
    assert loop.state.step == 0 and loop.state.best_step is None
    assert all(torch.equal(v, first_weights[k]) for k, v in resumed.model.state_dict().items())
    assert not loop.optimizer.state, "no Adam moments of the damaged checkpoint"
    torch.manual_seed(1)
    loop.run()
    assert [m["step"] for m in seen] == [m["step"] for m in expected] == [2, 4, 6, 8, 10, 12]
    assert [m["train_loss"] for m in seen] == [m["train_loss"] for m in expected], "the same run as one never restored"
    assert any("starting from the beginning" in line for line in lines)


def test_pick_best_prefers_the_better_of_checkpoint_and_best_folder(tmp_path: Path) -> None:
    checkpoint = tmp_path / "trial" / "checkpoint_000001"
    (checkpoint / MODEL_DIR).mkdir(parents=True)
    (checkpoint / MODEL_DIR / "w").write_bytes(b"x")
    (checkpoint / CHECKPOINT_MARKER).write_text(
        '{"step": 4, "best_step": 4, "best_value": 3.0, "weights_are_best": true, "files": {}}')
    best = BestFolder(StoredFolder.local(tmp_path / "trial" / "best"))
    folder = StoredFolder.local(checkpoint)
    assert pick_best(folder, best, "max").folder == folder.child(MODEL_DIR)
    best.keep(folder.child(MODEL_DIR), 6, 5.0)
    assert pick_best(folder, best, "max").step == 6
    assert pick_best(folder, best, "min").step == 4
    (tmp_path / "trial" / "best" / "w").write_bytes(b"")  # truncated: the folder no longer counts
    assert pick_best(folder, best, "max").step == 4


def test_nothing_in_the_package_unpickles_storage_content() -> None:
    """No ``torch.load`` without ``weights_only=True`` and no ``pickle.load(s)`` anywhere in ``sentsweep/``."""
    import sentsweep

    unsafe = []
    for path in Path(sentsweep.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)):
                continue
            owner, name = node.func.value.id, node.func.attr
            if owner == "pickle" and name in ("load", "loads"):
                unsafe.append(f"{path.name}:{node.lineno} pickle.{name}")
            if owner == "torch" and name == "load" and not any(
                    k.arg == "weights_only" and isinstance(k.value, ast.Constant) and k.value.value is True
                    for k in node.keywords):
                unsafe.append(f"{path.name}:{node.lineno} torch.load")
    assert unsafe == []


def test_the_best_folder_on_remote_storage_is_a_server_side_copy(tmp_path: Path) -> None:
    """On a non-local filesystem (pyarrow's in-memory mock, as S3 would be) the best folder is made with the
    storage's own copy (``copy_file``: S3 CopyObject), and fetched by a download."""
    import datetime

    import pyarrow.fs

    storage = pyarrow.fs._MockFileSystem(datetime.datetime.now())
    model = StoredFolder(storage, "bucket/sweep/trial/checkpoint_000003/model")
    storage.create_dir(model.path)
    with storage.open_output_stream(f"{model.path}/w.safetensors") as out:
        out.write(b"weights")
    best = BestFolder(StoredFolder(storage, "bucket/sweep/trial/best"))
    best.keep(model, 6, 81.5)
    assert best.marker()["step"] == 6 and best.folder.files()["w.safetensors"] == 7
    local = best.fetch(tmp_path / "fetched")
    assert (local / "w.safetensors").read_bytes() == b"weights"
    storage.delete_dir(model.parent().path)  # Tune removes the checkpoint: the best weights stay
    assert best.marker() is not None


class _Unfetchable(StoredFolder):
    """A checkpoint intact on the storage that the node cannot download: its disk is full."""

    def fetch(self, scratch: Path) -> Path:
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_checkpoint_the_node_cannot_read_fails_the_attempt_and_keeps_the_best(tmp_path: Path) -> None:
    """A full disk (or a storage error, or no memory) while fetching a checkpoint was taken for a
    corrupt checkpoint: the trial started again from step 0 and its first evaluation replaced the kept best
    weights with worse ones. Now the attempt fails (Tune retries it from the same checkpoint) and best/ stays."""
    trial = tmp_path / "trial"
    report, persisted = _persist_like_tune(trial)
    best = BestFolder(StoredFolder.local(trial / "best"))
    TrainingLoop(RegressionTask(), _config(), report=report, best=best, work_dir=tmp_path / "a").run()
    kept = best.marker()
    lines: list[str] = []
    seen: list[int] = []
    loop = TrainingLoop(RegressionTask(), _config(), report=lambda m, c: seen.append(int(m["step"])),
                        log=lines.append, best=best, work_dir=tmp_path / "b")
    latest = StoredFolder.local(persisted[12])
    with pytest.raises(CheckpointUnreadableError, match="No space left"):
        loop.run(resume_from=[_Unfetchable(latest.fs, latest.path), StoredFolder.local(persisted[8])])
    assert seen == [] and best.marker() == kept
    assert any("could not be read (OSError" in line and "not skipped" in line for line in lines), lines


def test_a_fresh_start_keeps_the_best_weights_an_earlier_attempt_kept(tmp_path: Path) -> None:
    """When no checkpoint is usable the trial starts over, but the best folder's weights (value 5.0 at step 8 here)
    stay the best to beat: worse evaluations of the new start do not replace them."""
    trial = tmp_path / "trial"
    report, _ = _persist_like_tune(trial)
    best = BestFolder(StoredFolder.local(trial / "best"))
    TrainingLoop(RegressionTask(), _config(), report=report, best=best, work_dir=tmp_path / "a").run()
    assert (best.marker()["step"], best.marker()["value"]) == (8, 5.0)
    again = RegressionTask()
    again.dev_scores = [1.0] * 6  # every evaluation of the new start is worse than the kept 5.0
    lines: list[str] = []
    result = TrainingLoop(again, _config(), report=lambda m, c: None, log=lines.append, best=best,
                          work_dir=tmp_path / "b").run(resume_from=[StoredFolder.local(tmp_path / "gone")])
    assert (best.marker()["step"], best.marker()["value"]) == (8, 5.0)
    assert (result.state.best_step, result.state.best_value) == (8, 5.0)
    assert any("stay the best until an evaluation beats them" in line for line in lines), lines


def test_an_unreadable_checkpoint_is_retried_by_tune_not_ended_or_taught_as_infeasible() -> None:
    from sentsweep.errors import SentsweepError
    from sentsweep.trainables.infeasible import infeasible_kind

    error = CheckpointUnreadableError("checkpoint_000003 could not be read (MemoryError: )")
    assert not isinstance(error, SentsweepError) and infeasible_kind(error) is None


def test_the_hosts_out_of_memory_error_is_a_failure_outside_the_checkpoint() -> None:
    """torch's CPU allocator raises a plain RuntimeError on no memory: not a corrupt checkpoint."""
    from sentsweep.trainables.checkpoints import failed_outside_the_checkpoint

    with pytest.raises(RuntimeError) as host:
        torch.empty(2**62, dtype=torch.uint8)  # more than any host has
    assert failed_outside_the_checkpoint(host.value)
    assert not failed_outside_the_checkpoint(RuntimeError("PytorchStreamReader failed reading zip archive"))
    assert not failed_outside_the_checkpoint(FileNotFoundError("checkpoint_000003/state.pt"))
