"""The training loop every method shares, under Ray Tune or standalone.

A method supplies a :class:`TrainTask` (its model, its batches, its loss, its dev evaluation); the loop
supplies everything else: seeding, AdamW/Adam with weight decay, linear warmup then linear decay,
gradient clipping, a step budget, evaluation every N steps, best-checkpoint keeping, resume (weights,
optimizer, scheduler, step, data position, RNG states), AMP on GPU, and a stop with a clear reason on a
non-finite loss. It reports through a plain callback ``report(metrics, checkpoint_dir)``, so the same
code runs under ``ray.tune.report`` and from the ``sentsweep train`` command. No Ray import here.

Checkpoint layout (one directory per report)::

    state.pt          optimizer, scheduler, step, epoch, batch position, RNG states, best, history
    model/            the current weights (task.save)
    best/             the best weights so far, unless the current ones are the best (best_is_current)
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import torch
from torch import Tensor, nn

from sentsweep.errors import ConfigError, SentsweepError

ReportFn = Callable[[dict[str, float], Path | None], None]
STATE_FILE = "state.pt"
MODEL_DIR = "model"
BEST_DIR = "best"


class NonFiniteLossError(SentsweepError):
    """The loss became NaN or infinite; the run stops and says where."""

    def __init__(self, step: int, value: float, diagnostics: dict[str, float] | None = None) -> None:
        self.step = step
        self.value = value
        self.diagnostics = dict(diagnostics or {})
        extra = f" ({', '.join(f'{k}={v:.4g}' for k, v in diagnostics.items())})" if diagnostics else ""
        super().__init__(
            f"non-finite loss {value} at step {step}{extra}: lower the learning rate or the loss scale, "
            "or enable gradient clipping"
        )

    def __reduce__(self) -> tuple[type, tuple[int, float, dict[str, float]]]:
        # Ray pickles a trial's exception to the driver; the default reduce would call __init__(message).
        return (type(self), (self.step, self.value, self.diagnostics))


class TrainTask(Protocol):
    """What a method gives the loop."""

    model: nn.Module

    def batches(self, epoch: int, generator: torch.Generator) -> Sequence[Any]:
        """The batches of one epoch, in order (shuffled with ``generator`` where the method allows)."""
        ...

    def loss(self, batch: Any) -> tuple[Tensor, dict[str, float]]:
        """The scalar loss of a batch and method diagnostics to log (may be empty)."""
        ...

    def evaluate(self) -> dict[str, float]:
        """Dev metrics (x100), including the loop's selection metric."""
        ...

    def save(self, directory: Path) -> None:
        """Write the model (HF ``save_pretrained`` + tokenizer, or the method's own format)."""
        ...

    def load(self, directory: Path) -> None:
        """Load weights written by :meth:`save` into ``self.model``."""
        ...


@dataclass
class LoopConfig:
    """Optimisation settings shared by every method, taken from a validated trial config
    (:meth:`sentsweep.trainables.trial_config.TrialConfig.loop_config`: its defaults and checks)."""

    seed: int
    optimizer: Literal["adamw", "adam"]
    lr: float
    weight_decay: float
    warmup_ratio: float
    lr_schedule: Literal["linear", "constant"]
    max_grad_norm: float | None
    epochs: float
    max_steps: int | None
    eval_every: int
    metric: str
    mode: Literal["max", "min"]
    amp: bool
    eval_at_start: bool
    log_every: int = 25


@dataclass
class LoopState:
    """Progress that a checkpoint must carry for an exact resume."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0
    best_value: float | None = None
    best_step: int | None = None
    history: list[dict[str, float]] = field(default_factory=list)


@dataclass
class LoopResult:
    state: LoopState
    best_dir: Path | None
    stopped_reason: str
    seconds: float


def seed_everything(seed: int) -> None:
    """Python, NumPy and torch (CPU and every GPU) generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _rng_state() -> dict[str, Any]:
    """Every generator's state in types ``torch.load(weights_only=True)`` accepts (numpy's key array as a
    tensor), so a checkpoint never needs the unpickler that can run code."""
    name, keys, pos, has_gauss, cached_gaussian = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached_gaussian)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    numpy = state["numpy"]
    np.random.set_state((numpy["name"], numpy["keys"].numpy().astype(np.uint32), numpy["pos"],
                         numpy["has_gauss"], numpy["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def build_optimizer(model: nn.Module, config: LoopConfig) -> torch.optim.Optimizer:
    """AdamW (or Adam) with no weight decay on biases and normalisation weights."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    if config.optimizer == "adam":
        return torch.optim.Adam(groups, lr=config.lr)
    return torch.optim.AdamW(groups, lr=config.lr)


def linear_schedule(
    optimizer: torch.optim.Optimizer, warmup: int, total: int, decay: bool = True
) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over ``warmup`` steps, then linear decay to 0 at ``total`` (``decay``) or constant."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        if not decay:
            return 1.0
        return max(0.0, (total - step) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _is_better(value: float, best: float | None, mode: str) -> bool:
    if best is None or math.isnan(best):
        return not math.isnan(value)
    return value > best if mode == "max" else value < best


class TrainingLoop:
    """Runs a :class:`TrainTask` to its step budget, reporting every ``eval_every`` steps."""

    def __init__(
        self,
        task: TrainTask,
        config: LoopConfig,
        report: ReportFn | None = None,
        log: Callable[[str], None] | None = None,
        work_dir: Path | None = None,
    ) -> None:
        """``work_dir``: where the checkpoints and the best weights are staged (a Tune trial passes a folder
        in its own directory, so nothing is left in the temp dir after a kill; whatever an earlier attempt
        left there is removed first); default: a new temporary folder."""
        self.task = task
        self.config = config
        self.report_fn = report or (lambda metrics, checkpoint: None)
        self.log = log or (lambda message: None)
        self.device = next(task.model.parameters()).device
        self.state = LoopState()
        seed_everything(config.seed)
        self.optimizer = build_optimizer(task.model, config)
        self.steps_per_epoch = len(task.batches(0, self._generator(0)))
        if self.steps_per_epoch == 0:
            raise ConfigError(
                "the training data gives no batch (is it empty, or smaller than one batch?)",
                field="train_data",
            )
        self.total_steps = config.max_steps or max(1, math.ceil(config.epochs * self.steps_per_epoch))
        warmup = int(config.warmup_ratio * self.total_steps)
        self.scheduler = linear_schedule(self.optimizer, warmup, self.total_steps,
                                         decay=config.lr_schedule == "linear")
        use_fp16 = self.device.type == "cuda" and config.amp and not torch.cuda.is_bf16_supported()
        self.scaler = torch.amp.GradScaler("cuda", enabled=use_fp16)
        if work_dir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="sentsweep-loop-"))
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
            work_dir.mkdir(parents=True)
            self._workdir = work_dir

    def _generator(self, epoch: int) -> torch.Generator:
        return torch.Generator().manual_seed(self.config.seed * 1000 + epoch)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.device.type != "cuda" or not self.config.amp:
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, directory: Path, best_is_current: bool, previous_best: Path | None) -> Path:
        """Write the resumable state to ``directory``; the best weights go along unless current."""
        directory.mkdir(parents=True, exist_ok=True)
        self.task.save(directory / MODEL_DIR)
        if not best_is_current and previous_best is not None and previous_best.exists():
            shutil.copytree(previous_best, directory / BEST_DIR, dirs_exist_ok=True)
        torch.save(
            {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict(),
                "rng": _rng_state(),
                "loop": asdict(self.state),
                "config": asdict(self.config),
                "best_is_current": best_is_current,
            },
            directory / STATE_FILE,
        )
        return directory

    def restore(self, checkpoint: Path) -> None:
        """Continue from a checkpoint written by :meth:`save_checkpoint` (same config)."""
        blob = torch.load(checkpoint / STATE_FILE, map_location="cpu", weights_only=True)
        self.task.load(checkpoint / MODEL_DIR)
        self.optimizer.load_state_dict(blob["optimizer"])
        self.scheduler.load_state_dict(blob["scheduler"])
        self.scaler.load_state_dict(blob["scaler"])
        self.state = LoopState(**blob["loop"])
        _set_rng_state(blob["rng"])
        source = checkpoint / (MODEL_DIR if blob["best_is_current"] else BEST_DIR)
        if source.exists() and self.state.best_step is not None:
            shutil.copytree(source, self._best_dir, dirs_exist_ok=True)
        self.log(
            f"resumed at step {self.state.step} (epoch {self.state.epoch}, "
            f"batch {self.state.batch_in_epoch}), best {self.state.best_value} at {self.state.best_step}"
        )

    @property
    def _best_dir(self) -> Path:
        return self._workdir / BEST_DIR

    # -- the loop ------------------------------------------------------------------------------
    def _evaluate_and_report(self, train_metrics: dict[str, float]) -> None:
        was_training = self.task.model.training
        self.task.model.eval()
        try:
            metrics = dict(self.task.evaluate())
        finally:
            self.task.model.train(was_training)
        value = metrics.get(self.config.metric)
        if value is None:
            raise ConfigError(
                f"metric '{self.config.metric}' is not among the evaluation's {sorted(metrics)}",
                field="metric",
            )
        improved = _is_better(value, self.state.best_value, self.config.mode)
        if improved:
            self.state.best_value, self.state.best_step = value, self.state.step
        metrics.update(train_metrics)
        metrics.update(
            {
                "step": float(self.state.step),
                "epoch": self.state.step / self.steps_per_epoch,
                "lr": self.scheduler.get_last_lr()[0],
                f"best_{self.config.metric}": self.state.best_value,
            }
        )
        self.state.history.append(metrics)
        checkpoint = self._workdir / f"checkpoint-{self.state.step:07d}"
        self.save_checkpoint(checkpoint, improved, self._best_dir)
        if improved:
            shutil.rmtree(self._best_dir, ignore_errors=True)
            shutil.copytree(checkpoint / MODEL_DIR, self._best_dir)
        self.log(
            f"step {self.state.step}/{self.total_steps} "
            + " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if k not in ("step",))
        )
        self.report_fn(metrics, checkpoint)
        shutil.rmtree(checkpoint, ignore_errors=True)

    def _epochs(self) -> Iterator[tuple[int, int, Any]]:
        epoch, skip = self.state.epoch, self.state.batch_in_epoch
        while True:
            batches = self.task.batches(epoch, self._generator(epoch))
            for index in range(skip, len(batches)):
                yield epoch, index, batches[index]
            epoch, skip = epoch + 1, 0

    def run(self, resume_from: Path | None = None) -> LoopResult:
        """Train to the step budget; returns the best weights' folder and why the loop stopped."""
        start = time.perf_counter()
        if resume_from is not None:
            self.restore(Path(resume_from))
        model = self.task.model
        model.train()
        if self.config.eval_at_start and self.state.step == 0:
            self._evaluate_and_report({})
        running: list[float] = []
        diagnostics: dict[str, list[float]] = {}
        for epoch, index, batch in self._epochs():
            if self.state.step >= self.total_steps:
                break
            with self._autocast():
                loss, diag = self.task.loss(batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise NonFiniteLossError(self.state.step + 1, value, diag)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            if self.config.max_grad_norm is not None:
                self.scaler.unscale_(self.optimizer)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), self.config.max_grad_norm)
                diag = {**diag, "grad_norm": float(norm)}
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.scheduler.step()
            self.state.step += 1
            self.state.epoch, self.state.batch_in_epoch = epoch, index + 1
            if self.state.batch_in_epoch >= self.steps_per_epoch:
                self.state.epoch, self.state.batch_in_epoch = epoch + 1, 0
            running.append(value)
            for key, v in diag.items():
                diagnostics.setdefault(key, []).append(v)
            if self.config.log_every and self.state.step % self.config.log_every == 0:
                recent = running[-self.config.log_every :]
                self.log(
                    f"step {self.state.step}/{self.total_steps} loss {np.mean(recent):.4f} "
                    f"lr {self.scheduler.get_last_lr()[0]:.3g}"
                )
            last = self.state.step >= self.total_steps
            if self.state.step % self.config.eval_every == 0 or last:
                train_metrics = {"train_loss": float(np.mean(running))}
                train_metrics.update({f"train_{k}": float(np.mean(v)) for k, v in diagnostics.items()})
                running, diagnostics = [], {}
                self._evaluate_and_report(train_metrics)
        best = self._best_dir if self._best_dir.exists() else None
        if best is not None:
            self.task.load(best)
        return LoopResult(self.state, best, "step budget reached", time.perf_counter() - start)

    def cleanup(self) -> None:
        shutil.rmtree(self._workdir, ignore_errors=True)


def write_history(history: list[dict[str, float]], path: Path) -> None:
    """The dev curve as JSON lines."""
    path.write_text("".join(json.dumps(row) + "\n" for row in history))


def checkpoint_weights(checkpoint: Path) -> Path:
    """The best weights a checkpoint written by :meth:`TrainingLoop.save_checkpoint` carries: ``model/``
    when the current weights were the best when it was written (or no best was kept), else ``best/``."""
    state = torch.load(checkpoint / STATE_FILE, map_location="cpu", weights_only=True, mmap=True)
    best = checkpoint / BEST_DIR
    return checkpoint / MODEL_DIR if state["best_is_current"] or not best.is_dir() else best
