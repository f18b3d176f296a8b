"""The loop's drain: when its stop check says so, a checkpoint at the step reached, reported as a draining report
(not an evaluation), then the wait; a resume from it continues exactly (same weights as a run never stopped)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import NoReturn

import pytest
import torch

from sentsweep.trainables.checkpoints import CHECKPOINT_MARKER
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.report_keys import DRAINING_KEY, EVALUATIONS_KEY
from tests.trainables.test_loop import RegressionTask, _config


class StopAfter:
    """The loop's stop check, raised once the task has trained ``steps`` steps; the wait ends the run as Tune's
    stop ends a trial (``SystemExit``)."""

    def __init__(self, task: RegressionTask, steps: int) -> None:
        self.task, self.steps = task, steps

    def requested(self) -> bool:
        return self.task.calls >= self.steps

    def wait(self) -> NoReturn:
        raise SystemExit(0)


def _reports(tmp_path: Path, reports: list[tuple[dict, Path | None]]):
    def report(metrics: dict, checkpoint: Path | None) -> None:
        kept = None
        if checkpoint is not None:
            kept = shutil.copytree(checkpoint, tmp_path / f"kept-{len(reports)}")
        reports.append((metrics, kept))
    return report


def test_drain_checkpoints_at_the_step_reached_and_resume_matches_an_unstopped_run(tmp_path: Path) -> None:
    config = _config(checkpoint_every=100)  # a checkpoint at the last evaluation only
    reports: list[tuple[dict, Path | None]] = []
    task = RegressionTask()
    loop = TrainingLoop(task, config, report=_reports(tmp_path, reports), stop=StopAfter(task, 5))
    with pytest.raises(SystemExit):
        loop.run()
    assert [int(m["step"]) for m, _ in reports] == [2, 4, 5]
    drained, checkpoint = reports[-1]
    assert drained[DRAINING_KEY] == 1.0 and EVALUATIONS_KEY not in drained
    assert [m[EVALUATIONS_KEY] for m, _ in reports[:-1]] == [1, 2]
    assert drained["score"] == reports[-2][0]["score"]  # the last evaluation's value, no new one
    best = f"best_{config.metric}"  # the best so far, which a resumed sweep's progress line reads
    assert drained[best] == reports[-2][0][best] == loop.state.best_value
    assert checkpoint is not None and json.loads((checkpoint / CHECKPOINT_MARKER).read_text())["step"] == 5
    assert all(c is None for _, c in reports[:-1])
    loop.cleanup()

    resumed = RegressionTask()
    resumed.calls = 5
    after: list[dict] = []
    loop = TrainingLoop(resumed, config, report=lambda m, c: after.append(m))
    loop.run(resume_from=checkpoint)
    assert [int(m["step"]) for m in after] == [6, 8, 10, 12] and resumed.calls == 12
    # the draining report is no evaluation: step 6 is the third (Tune counts it as its fourth report)
    assert [m[EVALUATIONS_KEY] for m in after] == [3, 4, 5, 6] and not any(DRAINING_KEY in m for m in after)
    assert all(EVALUATIONS_KEY not in row for row in loop.state.history)

    straight = RegressionTask()
    TrainingLoop(straight, config).run()
    assert torch.equal(straight.model[1].weight.detach(), resumed.model[1].weight.detach())


def test_nothing_new_to_save_drains_without_a_checkpoint(tmp_path: Path) -> None:
    reports: list[tuple[dict, Path | None]] = []
    task = RegressionTask()
    loop = TrainingLoop(task, _config(), report=_reports(tmp_path, reports), stop=StopAfter(task, 4))
    with pytest.raises(SystemExit):
        loop.run()  # step 4 was checkpointed by its evaluation (checkpoint_every 1)
    assert [(int(m["step"]), c is not None) for m, c in reports] == [(2, True), (4, True), (4, False)]
    loop.cleanup()

    fresh = RegressionTask()
    reports.clear()
    loop = TrainingLoop(fresh, _config(), report=_reports(tmp_path, reports), stop=StopAfter(fresh, 0))
    with pytest.raises(SystemExit):
        loop.run()  # before any step: no checkpoint, the metric NaN (no evaluation yet)
    ((metrics, checkpoint),) = reports
    assert checkpoint is None and math.isnan(metrics["score"]) and fresh.calls == 0
    loop.cleanup()


def test_the_training_figures_after_a_drain_average_every_step_since_the_last_evaluation(tmp_path: Path) -> None:
    """A drain between two evaluations keeps the losses of the steps it trained since the last one: the resumed
    trial's next ``train_loss`` (and each ``train_*`` diagnostic) averages the same steps as a trial never stopped."""
    config = _config(checkpoint_every=100)
    straight: dict[int, dict] = {}
    TrainingLoop(RegressionTask(), config, report=lambda m, c: straight.__setitem__(int(m["step"]), m)).run()
    reports: list[tuple[dict, Path | None]] = []
    task = RegressionTask()
    with pytest.raises(SystemExit):
        TrainingLoop(task, config, report=_reports(tmp_path, reports), stop=StopAfter(task, 5)).run()
    resumed = RegressionTask()
    resumed.calls = 5
    after: dict[int, dict] = {}
    TrainingLoop(resumed, config, report=lambda m, c: after.__setitem__(int(m["step"]), m)).run(
        resume_from=reports[-1][1])
    training = ("train_loss", "train_calls", "train_grad_norm")
    assert {k: after[6][k] for k in training} == {k: straight[6][k] for k in training}
    assert after[6]["train_calls"] == 5.5  # the steps 5 and 6, not step 6 alone
