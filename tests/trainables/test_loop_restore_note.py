"""A trial that resumes elsewhere than the checkpoint Tune named (an older checkpoint, or step 0) says where and why
in its first report, and counts its evaluations from the state it restored, so ASHA puts its reports on the rungs
their steps belong to (a fake sequence of restores on the real loop, and ASHA fed Tune's results)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from pydantic import BaseModel

from sentsweep.platform.results import evaluation_result
from sentsweep.platform.search.scheduler import FinalAwareASHA
from sentsweep.trainables.checkpoints import STATE_FILE, StoredFolder
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.method import retry_out_of_memory
from sentsweep.trainables.report_keys import EVALUATIONS_KEY
from sentsweep.trainables.restore_note import (
    RESTORE_REASON_KEY,
    RESTORED_FROM_KEY,
    TuneFallback,
    note_tune_fallback,
    restore_line,
    take_tune_fallback,
)
from tests.trainables.test_loop import RegressionTask, _config


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """The checkpoints of a 12-step run (an evaluation and a checkpoint every 2 steps), by step."""
    root = tmp_path_factory.mktemp("saved")
    checkpoints: dict[int, Path] = {}

    def keep(metrics: dict, checkpoint: Path | None) -> None:
        step = int(metrics["step"])
        checkpoints[step] = shutil.copytree(checkpoint, root / f"checkpoint_{step:06d}")

    TrainingLoop(RegressionTask(), _config(), report=keep).run()
    return checkpoints


def _resume(resume_from: list[StoredFolder], fallback: str | None = None, calls: int = 0) -> list[dict]:
    task = RegressionTask()
    task.calls = calls
    reports: list[dict] = []
    loop = TrainingLoop(task, _config(), report=lambda metrics, checkpoint: reports.append(metrics))
    loop.run(resume_from=resume_from, fallback=fallback)
    loop.cleanup()
    return reports


def _corrupt(checkpoint: Path, tmp_path: Path) -> StoredFolder:
    copy = shutil.copytree(checkpoint, tmp_path / checkpoint.name)
    (copy / STATE_FILE).write_bytes((copy / STATE_FILE).read_bytes()[:64])
    return StoredFolder.local(copy)


def test_a_resume_from_the_named_checkpoint_notes_nothing(saved: dict[int, Path]) -> None:
    reports = _resume([StoredFolder.local(saved[6])], calls=6)
    assert [(int(r["step"]), r[EVALUATIONS_KEY]) for r in reports] == [(8, 4), (10, 5), (12, 6)]
    assert not any(RESTORED_FROM_KEY in r for r in reports)


def test_a_corrupt_checkpoint_falls_back_and_the_first_report_says_so(saved: dict[int, Path], tmp_path: Path) -> None:
    reports = _resume([_corrupt(saved[8], tmp_path), StoredFolder.local(saved[6])], calls=6)
    first, *rest = reports
    assert first[RESTORED_FROM_KEY] == "checkpoint 6"
    assert first[RESTORE_REASON_KEY].startswith("checkpoint checkpoint_000008 is not usable (")
    assert not any(RESTORED_FROM_KEY in r for r in rest)
    # Tune restored iteration 4 (step 8) and would call step 8 iteration 5: the trial counts evaluation 4
    assert [(int(r["step"]), r[EVALUATIONS_KEY]) for r in reports] == [(8, 4), (10, 5), (12, 6)]


def test_no_usable_checkpoint_restarts_from_scratch_and_counts_from_one(saved: dict[int, Path],
                                                                       tmp_path: Path) -> None:
    reports = _resume([_corrupt(saved[8], tmp_path)])
    assert reports[0][RESTORED_FROM_KEY] == "scratch" and "checkpoint_000008 is not usable" in \
        reports[0][RESTORE_REASON_KEY]
    assert [(int(r["step"]), r[EVALUATIONS_KEY]) for r in reports][:2] == [(2, 1), (4, 2)]


def test_tunes_own_fallback_is_noted_by_trial_folder_and_reported_once(saved: dict[int, Path]) -> None:
    trial = str(saved[6].parent)
    note_tune_fallback(trial + "/", "checkpoint_000002 is gone (deleted after Tune's last snapshot)")
    assert take_tune_fallback("/another/trial") is None
    fallback = take_tune_fallback(trial)
    assert fallback is not None and take_tune_fallback(trial) is None, "taken once"

    reports = _resume([StoredFolder.local(saved[6])], fallback=fallback, calls=6)
    assert (reports[0][RESTORED_FROM_KEY], reports[0][RESTORE_REASON_KEY]) == ("checkpoint 6", fallback)
    assert restore_line("3c1f2a0b", reports[0]) == (
        "trial 3c1f2a0b resumed from checkpoint 6 (not the checkpoint Tune named): checkpoint_000002 is gone "
        "(deleted after Tune's last snapshot)")
    scratch = _resume([], fallback="checkpoint_000002 is gone")
    assert restore_line("3c1f2a0b", scratch[0]) == (
        "trial 3c1f2a0b restarted from scratch (not the checkpoint Tune named): checkpoint_000002 is gone")
    assert restore_line("3c1f2a0b", scratch[1]) is None


class Attempt(BaseModel):
    cached: bool = False  # what a memory fallback changes


@pytest.mark.parametrize("reports_before_oom", [0, 2])
def test_an_out_of_memory_retry_carries_tunes_fallback_only_when_no_report_did(saved: dict[int, Path],
                                                                             reports_before_oom: int) -> None:
    """Two attempts of one trial as ``Method.train_ray`` runs them: the first runs out of memory after
    ``reports_before_oom`` reports; the retry resumes from the newest checkpoint a report persisted."""
    trial = str(saved[6].parent) + "/oom"
    note_tune_fallback(trial, "checkpoint_000002 is gone")
    fallback = TuneFallback(trial)
    reports: list[dict] = []
    persisted: list[StoredFolder] = [StoredFolder.local(saved[6])]  # what Tune restored the trial from

    def keep(metrics: dict, checkpoint: Path | None) -> None:
        reports.append(metrics)
        if int(metrics["step"]) in saved:
            persisted.insert(0, StoredFolder.local(saved[int(metrics["step"])]))
        if len(reports) == reports_before_oom and not config.get("cached"):
            raise torch.OutOfMemoryError("CUDA out of memory")

    config: dict = {}
    report = fallback.reporting(keep)

    def attempt(settings: Attempt) -> None:
        config["cached"] = settings.cached
        task = RegressionTask()
        task.calls = int(persisted[0].name.rsplit("_", 1)[1])
        if reports_before_oom == 0 and not settings.cached:
            raise torch.OutOfMemoryError("CUDA out of memory")  # before the first report
        TrainingLoop(task, _config(), report=report).run(resume_from=list(persisted), fallback=fallback.reason)

    method = SimpleNamespace(memory_fallback=lambda settings: Attempt(cached=True))
    retry_out_of_memory(method, Attempt(), attempt, log=lambda line: None)  # type: ignore[arg-type]
    notes = [(int(r["step"]), r[RESTORE_REASON_KEY]) for r in reports if RESTORED_FROM_KEY in r]
    assert notes == [(8, "checkpoint_000002 is gone")], "told once, in the trial's first report"


def test_asha_places_reports_by_the_trials_own_evaluations() -> None:
    """Tune's results as the fallbacks make them (an evaluation every 4 steps): step 16 reported as iteration 3 (the
    snapshot named iteration 2, the trial resumed from step 12) and, from scratch, step 8 as iteration 7. ASHA
    compares each with the rung its evaluations reach: rung 4 holds a low value, rung 2 a high one."""
    from ray.tune.schedulers import TrialScheduler

    scheduler = FinalAwareASHA(time_attr="training_iteration", metric="score", mode="max", max_t=8,
                               grace_period=1, reduction_factor=2, brackets=1)
    trials = {name: SimpleNamespace(trial_id=name, config={}) for name in ("low", "high", "older", "fresh")}
    for trial in trials.values():
        scheduler.on_trial_add(None, trial)

    def report(name: str, iteration: int, evaluations: int, score: float) -> str:
        return scheduler.on_trial_result(None, trials[name], {"training_iteration": iteration, "score": score,
                                                              EVALUATIONS_KEY: float(evaluations)})

    assert report("low", 4, 4, 0.0) == report("high", 2, 2, 10.0) == TrialScheduler.CONTINUE
    assert report("older", 3, 4, 1.0) == TrialScheduler.CONTINUE, "step 16 is compared at rung 4 (above 0)"
    assert report("fresh", 7, 2, 1.0) == TrialScheduler.STOP, "step 8 is compared at rung 2 (below 10)"
    assert evaluation_result({"training_iteration": 7, EVALUATIONS_KEY: 2.0})["training_iteration"] == 2


def test_a_checkpoint_counting_its_drains_still_restores(saved: dict[int, Path], tmp_path: Path) -> None:
    """Checkpoints written while draining reports were counted in the loop state (``drains``) restore as they are."""
    import torch

    from sentsweep.trainables.checkpoints import write_checkpoint_marker

    older = shutil.copytree(saved[6], tmp_path / "checkpoint_000002")
    blob = torch.load(older / STATE_FILE, weights_only=True)
    blob["loop"]["drains"] = 1
    torch.save(blob, older / STATE_FILE)
    write_checkpoint_marker(older, 6, blob["loop"]["best_step"], blob["loop"]["best_value"])
    reports = _resume([StoredFolder.local(older)], calls=6)
    assert int(reports[0]["step"]) == 8 and RESTORED_FROM_KEY not in reports[0]


def test_a_resume_from_the_step_0_checkpoint_of_eval_at_start_does_not_evaluate_step_0_again(
        tmp_path: Path) -> None:
    """With ``eval_at_start`` the evaluation before the first step writes a checkpoint at step 0; a trial lost before
    its next checkpoint resumes from it and goes on to step 2 as its second evaluation (ASHA's rung 2), with one
    step-0 row in its history."""
    config = _config(eval_at_start=True)
    first: dict[int, Path] = {}

    def lost_after_step_0(metrics: dict, checkpoint: Path | None) -> None:
        if int(metrics["step"]) > 0:
            raise KeyboardInterrupt("the node is lost")
        first[0] = shutil.copytree(checkpoint, tmp_path / "checkpoint_000000")

    with pytest.raises(KeyboardInterrupt):
        TrainingLoop(RegressionTask(), config, report=lost_after_step_0, work_dir=tmp_path / "a").run()
    reports: list[dict] = []
    loop = TrainingLoop(RegressionTask(), config, report=lambda metrics, checkpoint: reports.append(metrics),
                        work_dir=tmp_path / "b")
    result = loop.run(resume_from=[StoredFolder.local(first[0])])
    assert [(int(r["step"]), r[EVALUATIONS_KEY]) for r in reports][:2] == [(2, 2), (4, 3)]
    assert [int(row["step"]) for row in result.state.history] == [0, 2, 4, 6, 8, 10, 12]


def test_a_checkpoint_written_without_loss_scaling_restores_where_the_loop_scales_the_loss(
        saved: dict[int, Path]) -> None:
    """A checkpoint of a bf16 GPU (or a CPU) holds no loss scaler state; retried on an fp16-only GPU, where the
    loop's scaler is on, the trial resumes at its step, its scaler starting afresh, not from scratch."""
    import torch

    task = RegressionTask()
    task.calls = 6
    reports: list[dict] = []
    lines: list[str] = []
    loop = TrainingLoop(task, _config(), report=lambda metrics, checkpoint: reports.append(metrics), log=lines.append)
    loop.scaler = torch.amp.GradScaler("cpu", enabled=True)  # the scaler of an fp16 GPU
    loop.run(resume_from=[StoredFolder.local(saved[6])])
    loop.cleanup()
    assert [int(r["step"]) for r in reports] == [8, 10, 12], lines
    assert RESTORED_FROM_KEY not in reports[0]
