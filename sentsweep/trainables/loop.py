"""The training loop every method shares, under Ray Tune or standalone.

A method supplies a :class:`~sentsweep.trainables.train_task.TrainTask` (its model, its batches, its loss, its dev
evaluation); the loop supplies everything else: seeding, AdamW/Adam with weight decay, linear warmup then linear
decay, gradient clipping, a step budget, evaluation every N steps, a checkpoint every ``checkpoint_every``
evaluations (and at the last one), best-weights keeping, resume (weights, optimizer, scheduler, step, data
position, RNG states) with a fallback to an older checkpoint when the latest is corrupt, AMP on GPU, a stop
with a clear reason on a non-finite loss, and a drain when its ``stop`` check says the sweep is stopping (a
checkpoint at the step reached, reported, then a wait: :mod:`sentsweep.trainables.stop_flag`). It reports through
a plain callback ``report(metrics, checkpoint_dir)``, so the same code runs under ``ray.tune.report`` and from the
``sentsweep train`` command.
No Ray import here.

A method's side is :mod:`sentsweep.trainables.train_task`, the settings and progress :mod:`.loop_state`, the
optimizer and schedule :mod:`.optimizer`, saving and restoring :mod:`.loop_checkpoints`; the checkpoint layout and
the one copy of the best weights are :mod:`sentsweep.trainables.checkpoints`'.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch

from sentsweep.errors import ConfigError, SentsweepError
from sentsweep.trainables.allocator import keep_freed_memory
from sentsweep.trainables.checkpoints import BEST_DIR, MODEL_DIR, BestFolder, StoredFolder
from sentsweep.trainables.loop_checkpoints import LoopCheckpoints
from sentsweep.trainables.loop_folder import new_loop_folder
from sentsweep.trainables.loop_state import LoopConfig, LoopResult, LoopState
from sentsweep.trainables.optimizer import build_optimizer, linear_schedule, seed_everything
from sentsweep.trainables.report_keys import EVALUATIONS_KEY, TOTAL_STEPS_KEY
from sentsweep.trainables.stop_flag import StopCheck, draining_report
from sentsweep.trainables.train_task import ReportFn, TrainTask

#: Diagnostics the loop reports itself (``train_loss``, ``train_grad_norm``): a task's own of these names is refused.
LOOP_DIAGNOSTICS = frozenset({"loss", "grad_norm"})

# EVALUATIONS_KEY, in each evaluation's report, is counted from the state the trial restored, so that a trial resumed
# from an older checkpoint or from scratch counts as it trained (Tune's ``training_iteration`` counts reports,
# draining ones included, and continues from the checkpoint Tune's snapshot named).


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


def _is_better(value: float, best: float | None, mode: str) -> bool:
    if best is None or math.isnan(best):
        return not math.isnan(value)
    return value > best if mode == "max" else value < best


class TrainingLoop(LoopCheckpoints):
    """Runs a :class:`TrainTask` to its step budget, reporting every ``eval_every`` steps."""

    def __init__(
        self,
        task: TrainTask,
        config: LoopConfig,
        report: ReportFn | None = None,
        log: Callable[[str], None] | None = None,
        work_dir: Path | None = None,
        best: BestFolder | None = None,
        stop: StopCheck | None = None,
    ) -> None:
        """``work_dir``: where checkpoints are staged before ``report`` (a Tune trial passes a folder in its own
        directory, so nothing is left in the temp dir after a kill; whatever an earlier attempt left there is
        removed first); default: a new temporary folder, removed by :meth:`cleanup`. ``best``: where the best
        weights are kept (a Tune trial's ``<trial>/best``); default: ``<work_dir>/best``. ``stop``: asked before
        every step; when it says so, the loop drains (:meth:`_drain`). The process's allocator keeps freed memory
        for the next step from here on (:mod:`sentsweep.trainables.allocator`)."""
        keep_freed_memory()
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
        # A temporary folder of our own goes with the loop: cleanup(), else when the loop is collected or the
        # process exits (TemporaryDirectory's finalizer); a SIGKILLed process's folder goes at the next loop.
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if work_dir is None:
            self._tmp = new_loop_folder()
            self._workdir = Path(self._tmp.name)
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
            work_dir.mkdir(parents=True)
            self._workdir = work_dir
        self.best = best or BestFolder(StoredFolder.local(self._workdir / BEST_DIR))
        self.stop = stop
        self._persisted_step = 0  # the step of the last checkpoint reported or restored
        #: where the trial resumed and why, when not from the checkpoint Tune named: told in the next report
        self._restore_note: dict[str, str] | None = None

    def _generator(self, epoch: int) -> torch.Generator:
        return torch.Generator().manual_seed(self.config.seed * 1000 + epoch)

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.device.type != "cuda" or not self.config.amp:
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)

    # -- checkpoints -------------------------------------------------------------------------
    def _checkpoint_due(self) -> bool:
        evaluations = self.state.step // self.config.eval_every
        return self.state.step >= self.total_steps or evaluations % self.config.checkpoint_every == 0

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
                # NaN until an evaluation gave a number (a collapsed model's Spearman is NaN): a report's figures
                # are numbers, and its log line formats them
                f"best_{self.config.metric}": math.nan if self.state.best_value is None else self.state.best_value,
            }
        )
        self.state.history.append(metrics)
        self.log(
            f"step {self.state.step}/{self.total_steps} "
            + " ".join(f"{k}={v:.4g}" for k, v in metrics.items() if k not in ("step",))
        )
        metrics = self._with_restore_note({**metrics, EVALUATIONS_KEY: float(len(self.state.history)),
                                           TOTAL_STEPS_KEY: float(self.total_steps)})
        if not self._checkpoint_due():
            if improved:  # no checkpoint holds these weights: they go to the best folder alone (no optimizer),
                staged = self._workdir / "best-weights"  # before the report: no score is heard without its weights
                self.task.save(staged)
                self.best.keep(StoredFolder.local(staged), self.state.step, value)
                shutil.rmtree(staged, ignore_errors=True)
            self.report_fn(metrics, None)
            return
        checkpoint = self.save_checkpoint(self._workdir / f"checkpoint-{self.state.step:07d}")
        persisted = self.report_fn(metrics, checkpoint)
        self._persisted_step = self.state.step
        if improved:  # a link to (or server-side copy of) the checkpoint's weights, after they were persisted
            source = persisted or StoredFolder.local(checkpoint)
            self.best.keep(source.child(MODEL_DIR), self.state.step, value)
        shutil.rmtree(checkpoint, ignore_errors=True)

    def _epochs(self) -> Iterator[tuple[int, int, Any]]:
        epoch, skip = self.state.epoch, self.state.batch_in_epoch
        while True:
            batches = self.task.batches(epoch, self._generator(epoch))
            for index in range(skip, len(batches)):
                yield epoch, index, batches[index]
            epoch, skip = epoch + 1, 0

    def run(self, resume_from: Path | StoredFolder | Sequence[StoredFolder] | None = None,
            fallback: str | None = None) -> LoopResult:
        """Train to the step budget; returns the best weights' folder and why the loop stopped.

        ``resume_from``: a checkpoint, or several, newest first (:meth:`restore`); ``fallback``: why they are not
        the checkpoint Tune named (without any: the trial starts from scratch for that reason)."""
        start = time.perf_counter()
        if resume_from:
            self.restore(resume_from, fallback)
        elif fallback:
            self._note_restore(None, [fallback])
        if self.state.best_step is None:
            self._adopt_kept_best()
        model = self.task.model
        model.train()
        if self.config.eval_at_start and self.state.step == 0 and not self.state.history:
            self._evaluate_and_report({})  # once: a resume from its step-0 checkpoint has it in its history
        self._persisted_step = self.state.step
        for epoch, index, batch in self._epochs():
            if self.state.step >= self.total_steps:
                break
            if self.stop is not None and self.stop.requested():
                self._drain(self.stop)
            with self._autocast():
                loss, diag = self.task.loss(batch)
            if clash := LOOP_DIAGNOSTICS.intersection(diag):
                raise ValueError(f"{type(self.task).__name__}.loss returned the diagnostic(s) {sorted(clash)}: "
                                 "the loop reports these itself, as train_loss and train_grad_norm")
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
            running, diagnostics = self.state.losses, self.state.diagnostics
            running.append(value)
            for key, v in diag.items():
                diagnostics.setdefault(key, []).append(float(v))  # plain floats: a checkpoint loads them
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
                self.state.losses, self.state.diagnostics = [], {}
                self._evaluate_and_report(train_metrics)
        return LoopResult(self.state, self._load_best(), "step budget reached", time.perf_counter() - start)

    def _drain(self, stop: StopCheck) -> NoReturn:
        """The sweep is stopping: report a checkpoint at the step reached (none when nothing changed since the last
        one) as a draining report (:func:`~sentsweep.trainables.stop_flag.draining_report`), then wait."""
        metrics = self._with_restore_note(draining_report(self.state.step, self.config.metric, self.state.history,
                                                          self.state.best_value))
        fresh = self.state.step != self._persisted_step
        checkpoint = self.save_checkpoint(self._workdir / f"checkpoint-{self.state.step:07d}") if fresh else None
        self.report_fn(metrics, checkpoint)
        self.log(f"stopping: step {self.state.step}/{self.total_steps} {'checkpointed' if fresh else 'kept'}")
        stop.wait()

    def _load_best(self) -> Path | None:
        """Put the best weights into the model (unless they are the current ones); their local folder."""
        if self.state.best_step is None or self.state.best_step == self.state.step:
            return None
        best = self.best.fetch(self._workdir / "best-fetched")
        if best is None:
            self._warn(f"the best weights (step {self.state.best_step}) are gone: the final weights are used")
            return None
        self.task.load(best)
        return best

    def cleanup(self) -> None:
        """Remove the work folder now."""
        shutil.rmtree(self._workdir, ignore_errors=True)
        if self._tmp is not None:
            self._tmp.cleanup()
