"""What every CoSENT-package loss is: an ``nn.Module`` with its hyperparameters and its paper.

As sentence-transformers' losses do, each loss class carries a ``citation`` (BibTeX) and
``get_config_dict()`` (its hyperparameters, for run tracking and ``repr``). Pair losses
(:class:`PairLossModule`) share one call, ``loss(u, v, labels) -> scalar`` for a batch of embedded pairs
``(u_i, v_i)`` with labels ``y_i``; they are modules so that a loss with parameters (the softmax head)
is found by ``model.parameters()`` / the optimiser and saved in checkpoints.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol, runtime_checkable

from torch import Tensor, nn


@runtime_checkable
class PairLoss(Protocol):
    """What a training loop calls: embeddings of a batch of labelled pairs in, scalar loss out."""

    def __call__(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor: ...


class Loss(nn.Module):
    """Base of the losses: ``name`` (its registry key), ``citation`` (BibTeX), ``get_config_dict()``."""

    name: str = ""
    citation: str = ""

    def get_config_dict(self) -> dict[str, Any]:
        """The loss's hyperparameters (for run tracking)."""
        return {}

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.get_config_dict().items())


class PairLossModule(Loss, ABC):
    """Base of the pair losses: ``forward(u, v, labels) -> scalar``."""

    @abstractmethod
    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        """The mean loss of the batch of pairs ``(u_i, v_i)`` with labels ``y_i``."""
