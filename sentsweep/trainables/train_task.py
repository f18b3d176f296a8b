"""What a method gives the shared training loop (:class:`TrainTask`) and how the loop reports (:data:`ReportFn`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn

from sentsweep.trainables.checkpoints import StoredFolder

#: ``report(metrics, checkpoint_dir)``; returns where the checkpoint was persisted (Tune's storage), if anywhere.
ReportFn = Callable[[dict[str, float], Path | None], StoredFolder | None]


class TrainTask(Protocol):
    """What a method gives the loop."""

    model: nn.Module

    def batches(self, epoch: int, generator: torch.Generator) -> Sequence[Any]:
        """The batches of one epoch, in order (shuffled with ``generator`` where the method allows)."""
        ...

    def loss(self, batch: Any) -> tuple[Tensor, dict[str, float]]:
        """The scalar loss of a batch and method diagnostics to log (may be empty). Each diagnostic is reported as
        ``train_<name>``: the loop's own names (:data:`~sentsweep.trainables.loop.LOOP_DIAGNOSTICS`) are refused."""
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
