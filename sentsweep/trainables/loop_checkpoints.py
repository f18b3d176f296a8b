"""How the training loop saves and restores its checkpoints (:class:`LoopCheckpoints`).

A checkpoint holds the weights, optimizer, scheduler, loss scaler, RNG states and the loop's position. A restore
takes the newest usable checkpoint of several, skips a corrupt one with a warning, and keeps the best weights
consistent with the restored state. The checkpoint layout and the one copy of the best weights are
:mod:`sentsweep.trainables.checkpoints`'.
"""

from __future__ import annotations

import copy
import logging
import math
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

import torch

from sentsweep.trainables.checkpoints import (
    BEST_DIR,
    MODEL_DIR,
    STATE_FILE,
    BestFolder,
    CheckpointUnreadableError,
    StoredFolder,
    check_checkpoint,
    failed_outside_the_checkpoint,
    pick_best,
    rng_state,
    set_rng_state,
    write_checkpoint_marker,
)
from sentsweep.trainables.loop_state import LoopConfig, LoopState
from sentsweep.trainables.restore_note import RESTORE_REASON_KEY, RESTORED_FROM_KEY, resumed_at
from sentsweep.trainables.train_task import TrainTask

#: The loop's warnings are logged under the loop's name.
logger = logging.getLogger("sentsweep.trainables.loop")


class LoopCheckpoints:
    """The checkpoint side of :class:`~sentsweep.trainables.loop.TrainingLoop`, which sets the attributes below."""

    task: TrainTask
    config: LoopConfig
    state: LoopState
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    best: BestFolder
    log: Callable[[str], None]
    _workdir: Path
    _restore_note: dict[str, str] | None

    def save_checkpoint(self, directory: Path) -> Path:
        """Write the resumable state to ``directory`` once: weights, optimizer, scheduler, RNG, position; the
        marker (``checkpoint.json``) last."""
        directory.mkdir(parents=True, exist_ok=True)
        self.task.save(directory / MODEL_DIR)
        torch.save(
            {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict(),
                "rng": rng_state(),
                "loop": asdict(self.state),
                "config": asdict(self.config),
            },
            directory / STATE_FILE,
        )
        write_checkpoint_marker(directory, self.state.step, self.state.best_step, self.state.best_value)
        return directory

    def restore(self, checkpoint: Path | StoredFolder | Sequence[StoredFolder], fallback: str | None = None) -> None:
        """Continue from a checkpoint written by :meth:`save_checkpoint` (same config). Given several (newest
        first), a corrupt or half-written one is skipped with a warning for the next; when none is usable the
        run starts from the beginning, with a warning. A checkpoint that could not be read for a reason outside it
        (:func:`~sentsweep.trainables.checkpoints.failed_outside_the_checkpoint`: a full disk, a storage error, no
        memory) is not skipped: :class:`~sentsweep.trainables.checkpoints.CheckpointUnreadableError` is raised, and
        the attempt fails for Tune to retry. ``fallback``: why the first candidate is not the checkpoint Tune named
        (:mod:`~sentsweep.trainables.restore_note`). A resume elsewhere than the checkpoint Tune named is told in the
        next report."""
        if isinstance(checkpoint, Path):
            candidates: Sequence[StoredFolder] = [StoredFolder.local(checkpoint)]
        elif isinstance(checkpoint, StoredFolder):
            candidates = [checkpoint]
        else:
            candidates = list(checkpoint)
        reasons = [fallback] if fallback else []
        put_back = self._put_back_as_now()
        for candidate in candidates:
            scratch = self._workdir / f"restore-{candidate.name}"
            try:
                local = candidate.fetch(scratch)
                self._load(local, candidate)
                if reasons:
                    self._note_restore(self.state.step, reasons)
                return
            except Exception as exc:  # a corrupt file fails in many ways (safetensors, pickle, zip, sizes)
                if failed_outside_the_checkpoint(exc):
                    why = f"checkpoint {candidate.name} could not be read ({type(exc).__name__}: {exc})"
                    self._warn(f"{why}; it is not skipped: this attempt fails, to be retried from it")
                    raise CheckpointUnreadableError(why) from exc
                self._warn(f"checkpoint {candidate.name} is not usable ({type(exc).__name__}: {exc}); "
                           + ("falling back to the previous one" if candidate is not candidates[-1]
                              else "starting from the beginning"))
                reasons.append(f"checkpoint {candidate.name} is not usable ({type(exc).__name__})")
                put_back()  # a checkpoint that loaded in part leaves nothing for the next one, or the start
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        if reasons:
            self._note_restore(None, reasons)

    def _put_back_as_now(self) -> Callable[[], None]:
        """A function that puts the weights, the optimizer, scheduler and scaler, the position and the RNGs back as
        they are now: what a checkpoint that failed half-way through :meth:`_load` had already changed."""
        weights = {k: v.detach().to("cpu", copy=True) for k, v in self.task.model.state_dict().items()}
        parts = [(part, copy.deepcopy(part.state_dict())) for part in (self.optimizer, self.scheduler, self.scaler)]
        state, rng = copy.deepcopy(self.state), rng_state()

        def put_back() -> None:
            self.task.model.load_state_dict(weights)
            for part, saved in parts:
                if saved or not isinstance(part, torch.amp.GradScaler):  # a disabled scaler's state is empty
                    part.load_state_dict(saved)
            self.state = copy.deepcopy(state)
            set_rng_state(rng)

        return put_back

    def _note_restore(self, step: int | None, reasons: list[str]) -> None:
        self._restore_note = {RESTORED_FROM_KEY: resumed_at(step), RESTORE_REASON_KEY: "; ".join(reasons)[:500]}

    def _with_restore_note(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """``metrics`` with the note of a resume elsewhere than Tune's checkpoint, in the first report after it."""
        note, self._restore_note = self._restore_note, None
        return {**metrics, **note} if note else metrics

    def _warn(self, message: str) -> None:
        logger.warning(message)
        self.log(f"WARNING: {message}")

    def _load(self, local: Path, stored: StoredFolder) -> None:
        marker = check_checkpoint(local)
        blob = torch.load(local / STATE_FILE, map_location="cpu", weights_only=True)
        self.task.load(local / MODEL_DIR)
        self.optimizer.load_state_dict(blob["optimizer"])
        self.scheduler.load_state_dict(blob["scheduler"])
        if blob["scaler"] or not self.scaler.is_enabled():  # none saved where the loss was not scaled (bf16, CPU):
            self.scaler.load_state_dict(blob["scaler"])  # an fp16 GPU's scaler then starts afresh
        known = {f.name for f in fields(LoopState)}  # a checkpoint of an older layout may hold more
        self.state = LoopState(**{k: v for k, v in blob["loop"].items() if k in known})
        set_rng_state(blob["rng"])
        self.log(
            f"resumed at step {self.state.step} (epoch {self.state.epoch}, "
            f"batch {self.state.batch_in_epoch}) from {stored.name}, best {self.state.best_value} at "
            f"{self.state.best_step}"
        )
        if self.state.best_step is None:
            return
        self.best.settle()  # a replacement of the best weights cut short by the failure: finished now
        source = pick_best(stored, self.best, self.config.mode, checkpoint_marker=marker)
        if source is None:
            self._warn(f"the best weights of step {self.state.best_step} are gone (no intact {BEST_DIR}/ folder); "
                       "the best is chosen again from the next evaluation")
            self.state.best_value = self.state.best_step = None
        elif source.in_checkpoint:
            if (self.best.marker() or {}).get("step") != source.step:
                self.best.keep(source.folder, source.step, source.value)
        elif source.step != self.state.best_step:
            self.log(f"the best weights kept in {BEST_DIR}/ (step {source.step}, {source.value:.4g}) are better "
                     f"than this checkpoint's best (step {self.state.best_step}): kept as the best")
            self.state.best_value, self.state.best_step = source.value, source.step

    def _adopt_kept_best(self) -> None:
        """A start without a best (a fresh start after every checkpoint proved unusable, or a trial restarted
        without one) keeps the best weights an earlier attempt left in the best folder as the best to beat, so the
        first evaluation of the new start cannot replace them with worse ones."""
        marker = self.best.marker()
        value = (marker or {}).get("value")
        if not isinstance(value, int | float) or not math.isfinite(value):
            return
        self.state.best_value, self.state.best_step = float(value), int(marker["step"])
        self.log(f"the best weights kept in {BEST_DIR}/ (step {self.state.best_step}, {self.state.best_value:.4g}) "
                 "by an earlier attempt stay the best until an evaluation beats them")
