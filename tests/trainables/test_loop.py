"""The shared training loop: schedule, best-checkpoint keeping, exact resume, non-finite loss stop."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from sentsweep.errors import ConfigError
from sentsweep.trainables.loop import NonFiniteLossError, TrainingLoop
from sentsweep.trainables.loop_state import LoopConfig
from sentsweep.trainables.optimizer import linear_schedule
from sentsweep.trainables.trial_config import TrialConfig, parse_config


class RegressionTask:
    """y = x @ w_true with dropout in the model, so resume must restore RNG state to match exactly."""

    def __init__(self, poison_at: int | None = None) -> None:
        torch.manual_seed(0)
        self.x = torch.randn(64, 8)
        self.y = self.x @ torch.randn(8, 1)
        self.model = nn.Sequential(nn.Dropout(0.2), nn.Linear(8, 1))
        self.calls = 0
        self.poison_at = poison_at
        self.dev_scores = [1.0, 3.0, 2.0, 5.0, 4.0, 0.5]

    def batches(self, epoch: int, generator: torch.Generator) -> list[torch.Tensor]:
        return list(torch.randperm(64, generator=generator).split(16))

    def loss(self, batch: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        self.calls += 1
        value = nn.functional.mse_loss(self.model(self.x[batch]), self.y[batch])
        if self.poison_at is not None and self.calls >= self.poison_at:
            value = value * float("nan")
        return value, {"calls": float(self.calls)}

    def evaluate(self) -> dict[str, float]:
        return {"score": self.dev_scores[min(len(self.dev_scores) - 1, self.calls // 2 - 1)]}

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        save_file(dict(self.model.state_dict()), str(directory / "w.safetensors"))

    def load(self, directory: Path) -> None:
        self.model.load_state_dict(load_file(str(directory / "w.safetensors")))


def _config(**kw) -> LoopConfig:
    base = dict(lr=0.05, max_steps=12, eval_every=2, warmup_ratio=0.25, max_grad_norm=1.0)
    loop = TrialConfig(**{**base, **kw}).loop_config()
    loop.metric = "score"
    return loop


def test_linear_warmup_then_decay() -> None:
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = linear_schedule(opt, warmup=2, total=6)
    lrs = []
    for _ in range(6):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs == pytest.approx([0.5, 1.0, 1.0, 0.75, 0.5, 0.25])


def test_reports_every_n_steps_and_keeps_the_best(tmp_path: Path) -> None:
    reports: list[tuple[dict, bool]] = []
    task = RegressionTask()
    loop = TrainingLoop(task, _config(), report=lambda m, c: reports.append((m, c is not None and c.exists())))
    result = loop.run()
    assert [int(m["step"]) for m, _ in reports] == [2, 4, 6, 8, 10, 12]
    assert all(has_checkpoint for _, has_checkpoint in reports)
    assert result.state.best_value == 5.0 and result.state.best_step == 8
    assert reports[-1][0]["best_score"] == 5.0
    # The loop hands back the best weights, not the last ones.
    best = load_file(str(result.best_dir / "w.safetensors"))
    assert torch.equal(task.model[1].weight.detach(), best["1.weight"])
    loop.cleanup()


def test_a_given_work_folder_is_cleared_first_and_removed_at_the_end(tmp_path: Path) -> None:
    work = tmp_path / "trial" / "work"
    (work / "checkpoint-0000002").mkdir(parents=True)  # what a killed earlier attempt left
    staged: list[Path] = []
    loop = TrainingLoop(RegressionTask(), _config(), report=lambda m, c: staged.append(c), work_dir=work)
    assert work.is_dir() and list(work.iterdir()) == []
    loop.run()
    assert staged and all(c is not None and c.is_relative_to(work) for c in staged)
    loop.cleanup()
    assert not work.exists()


def test_resume_continues_at_the_saved_step_exactly(tmp_path: Path) -> None:
    saved: dict[int, Path] = {}

    def keep(metrics: dict, checkpoint: Path | None) -> None:
        step = int(metrics["step"])
        saved[step] = shutil.copytree(checkpoint, tmp_path / f"ckpt-{step}")

    straight = RegressionTask()
    TrainingLoop(straight, _config(), report=keep).run()

    resumed = RegressionTask()
    resumed.calls = 6  # what the first run had done by step 6 (drives the toy dev score)
    seen: list[int] = []
    loop = TrainingLoop(resumed, _config(), report=lambda m, c: seen.append(int(m["step"])))
    result = loop.run(resume_from=saved[6])
    assert seen == [8, 10, 12]
    assert result.state.best_value == 5.0 and result.state.best_step == 8
    # Same data order, same dropout masks: identical final weights to the uninterrupted run.
    final_straight = load_file(str(saved[12] / "model" / "w.safetensors"))
    assert torch.allclose(resumed.model[1].weight.detach(), load_file(str(result.best_dir / "w.safetensors"))[
        "1.weight"])
    last = {}
    resumed_loop_ckpt = TrainingLoop(RegressionTask(), _config())
    resumed_loop_ckpt.restore(saved[12])
    last = resumed_loop_ckpt.task.model.state_dict()
    assert torch.equal(last["1.weight"], final_straight["1.weight"])


def test_resume_weights_match_uninterrupted_run(tmp_path: Path) -> None:
    saved: dict[int, Path] = {}
    straight = RegressionTask()
    TrainingLoop(straight, _config(eval_every=4), report=lambda m, c: saved.__setitem__(
        int(m["step"]), shutil.copytree(c, tmp_path / f"a{int(m['step'])}"))).run()
    resumed = RegressionTask()
    finals: dict[int, Path] = {}
    TrainingLoop(resumed, _config(eval_every=4), report=lambda m, c: finals.__setitem__(
        int(m["step"]), shutil.copytree(c, tmp_path / f"b{int(m['step'])}"))).run(resume_from=saved[4])
    a = load_file(str(saved[12] / "model" / "w.safetensors"))
    b = load_file(str(finals[12] / "model" / "w.safetensors"))
    assert torch.equal(a["1.weight"], b["1.weight"]) and torch.equal(a["1.bias"], b["1.bias"])


def test_non_finite_loss_stops_with_the_step() -> None:
    loop = TrainingLoop(RegressionTask(poison_at=5), _config())
    with pytest.raises(NonFiniteLossError, match="non-finite loss nan at step 5"):
        loop.run()


@pytest.mark.parametrize("name", ["loss", "grad_norm"])
def test_a_task_diagnostic_named_as_the_loops_own_is_refused(name: str) -> None:
    """``train_loss`` and ``train_grad_norm`` are the loop's: a task's diagnostic of that name would replace them."""

    class Clashing(RegressionTask):
        def loss(self, batch: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
            value, _ = super().loss(batch)
            return value, {name: 0.0}

    with pytest.raises(ValueError, match=f"Clashing.loss returned the diagnostic.*'{name}'"):
        TrainingLoop(Clashing(), _config()).run()


def test_max_steps_is_the_step_budget_in_place_of_epochs_as_the_fields_say() -> None:
    """Four batches an epoch: max_steps 12 trains 12 steps with epochs 1, and 2 with epochs 3."""
    assert TrainingLoop(RegressionTask(), _config(epochs=1, max_steps=12)).total_steps == 12
    assert TrainingLoop(RegressionTask(), _config(epochs=3, max_steps=2)).total_steps == 2
    assert TrainingLoop(RegressionTask(), _config(epochs=3, max_steps=None)).total_steps == 12
    fields = TrialConfig.model_fields
    assert "unless max_steps is set" in (fields["epochs"].description or "")
    assert "in place of epochs" in (fields["max_steps"].description or "")


def test_bad_loop_settings_name_the_field() -> None:
    """The loop takes its settings from a validated trial config: the config is where they are checked."""
    with pytest.raises(ConfigError, match="warmup_ratio"):
        parse_config(TrialConfig, {"warmup_ratio": 1.5})
    with pytest.raises(ConfigError, match="lr"):
        parse_config(TrialConfig, {"lr": 0})
    with pytest.raises(ConfigError, match="max_grad_norm"):
        parse_config(TrialConfig, {"max_grad_norm": 0})


def test_a_loop_without_a_work_dir_leaves_no_temp_folder_even_without_cleanup() -> None:
    import gc

    loop = TrainingLoop(RegressionTask(), _config())
    loop.run()
    folder = loop._workdir
    assert folder.is_dir() and folder.name.startswith(f"sentsweep-loop-{__import__('os').getpid()}-")
    del loop
    gc.collect()
    assert not folder.exists()


@pytest.mark.parametrize("kind", ["adamw", "adam"])
def test_the_fused_optimizer_takes_the_steps_of_the_default_one(kind: str) -> None:
    """The loop's optimizer is PyTorch's fused kernel on the CPU, and its 20 steps equal the default (foreach)
    implementation's to float precision, weight decay groups included."""
    from sentsweep.trainables.optimizer import build_optimizer

    config = _config(optimizer=kind, weight_decay=0.01)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.Linear(32, 1))
    twin = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.Linear(32, 1))
    twin.load_state_dict(net.state_dict())
    fused = build_optimizer(net, config)
    assert all(group["fused"] for group in fused.param_groups)
    plain_kind = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
    plain = plain_kind([{**g, "params": [dict(twin.named_parameters())[n] for n, p in net.named_parameters()
                                         if any(p is q for q in g["params"])], "fused": None, "foreach": True}
                        for g in fused.param_groups])
    start = net[0].weight.detach().clone()
    x, y = torch.randn(64, 16), torch.randn(64, 1)
    for _ in range(20):
        for model, opt in ((net, fused), (twin, plain)):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    for (name, a), b in zip(net.named_parameters(), twin.parameters(), strict=True):
        assert (a - b).abs().max().item() < 1e-6, name
    assert (net[0].weight - start).abs().max().item() > 1e-3  # the steps moved the weights


def test_a_loop_folder_of_a_killed_process_goes_at_the_next_loop(tmp_path) -> None:
    """SIGKILL runs no finalizer; the next loop removes the folders of processes that are gone, never a live one's."""
    import os
    import signal
    import subprocess
    import sys

    from sentsweep.trainables.loop_folder import PREFIX, remove_stale

    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead_folder = tmp_path / f"{PREFIX}{killed.pid}-abc"
    (dead_folder / "best").mkdir(parents=True)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=30)
    live_folder = tmp_path / f"{PREFIX}{os.getpid()}-def"
    live_folder.mkdir()
    other = tmp_path / f"{PREFIX}notapid"
    other.mkdir()
    assert remove_stale(tmp_path) == [dead_folder]
    assert not dead_folder.exists() and live_folder.is_dir() and other.is_dir()
