"""Gradient caching for in-batch-negative losses: a large batch in the memory of a mini-batch.

A contrastive loss with in-batch negatives (InfoNCE, SNCSE eq. 3 and 7) couples every row of the batch, so a
smaller batch is not a cheaper version of the same training: it changes the number of negatives and the
objective itself. Gradient caching (Gao, Zhang, Han and Callan 2021, "Scaling Deep Contrastive Learning Batch
Size under Memory Limited Setup", section 3) keeps the objective and splits the *computation*:

1. the embeddings of the whole batch are computed mini-batch by mini-batch without a graph;
2. the loss is computed on the full batch of (detached) embeddings, and its gradient with respect to each
   embedding, ``dL/dz``, is cached (the embeddings are small: ``batch x dim``);
3. each mini-batch is encoded again, this time with a graph, and back-propagated with its slice of the cached
   ``dL/dz`` (the chain rule ``dL/dtheta = sum_i dL/dz_i dz_i/dtheta``), so only one mini-batch's activations
   exist at a time.

Dropout makes step 3 differ from step 1 unless both draw the same masks: the random-number state (CPU and
CUDA) before each mini-batch of step 1 is recorded and replayed in step 3, and the state after step 1 is
restored at the end, so the result is the full-batch loss over the embeddings step 1 computed, and its exact
gradient. (A single forward pass over the whole batch draws its dropout masks in another layout, so with dropout
on it is the same objective with other masks; with dropout off it is the same computation, to float error.)

:func:`cached_loss` returns the loss as a tensor whose ``backward()`` runs step 3 (a re-entrant backward, as
``torch.utils.checkpoint`` does), so a training loop that calls ``loss.backward()`` (scaled by a GradScaler or
not, with gradient clipping after it) needs no change. Pure PyTorch: no Ray, no MLflow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

#: ``embed(start, stop)``: the embeddings of rows ``start:stop`` of the batch, one tensor (or None) per view.
EmbedFn = Callable[[int, int], Sequence[Tensor | None]]
#: ``loss_fn(*views)``: the scalar loss of the full batch and diagnostics (floats).
LossFn = Callable[..., tuple[Tensor, dict[str, float]]]


@dataclass(frozen=True)
class RngState:
    """The CPU generator's state and, when CUDA is in use, every GPU's."""

    cpu: Tensor
    cuda: list[Tensor] | None

    @classmethod
    def capture(cls) -> RngState:
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
        return cls(torch.get_rng_state(), cuda)

    def restore(self) -> None:
        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)


@dataclass(frozen=True)
class _Autocast:
    """The autocast state of the first pass, re-entered by the backward pass (which runs outside it)."""

    device_type: str
    enabled: bool
    dtype: torch.dtype

    @classmethod
    def capture(cls, device_type: str) -> _Autocast:
        return cls(device_type, torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type))

    def __call__(self) -> torch.autocast:
        return torch.autocast(self.device_type, dtype=self.dtype, enabled=self.enabled)


def minibatch_bounds(size: int, minibatch: int) -> list[tuple[int, int]]:
    """``[(0, m), (m, 2m), ...]`` covering ``size`` rows."""
    if minibatch < 1:
        raise ValueError(f"the mini-batch must hold at least one row, got {minibatch}")
    return [(start, min(start + minibatch, size)) for start in range(0, size, minibatch)]


class _CachedBackward(torch.autograd.Function):
    """Forward: the loss value. Backward: the mini-batch replay that puts ``dL/dtheta`` into ``.grad``."""

    @staticmethod
    def forward(ctx: Any, anchor: Tensor, value: Tensor, replay: Callable[[Tensor], None]) -> Tensor:
        ctx.replay = replay
        return value.clone()

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[None, None, None]:
        ctx.replay(grad_output)
        return None, None, None


def cached_loss(embed: EmbedFn, size: int, minibatch: int, loss_fn: LossFn) -> tuple[Tensor, dict[str, float]]:
    """The full-batch loss of ``size`` rows computed with gradient caching over mini-batches of ``minibatch``.

    ``embed(start, stop)`` encodes rows ``start:stop`` (with the model in whatever mode the caller set: dropout
    on in training) and returns one tensor per view (``None`` for an absent view, e.g. SNCSE's soft negatives
    under plain InfoNCE); ``loss_fn`` takes the full batch's views in the same order. Returns the loss (its
    ``backward()`` back-propagates into the parameters ``embed`` used, mini-batch by mini-batch) and
    ``loss_fn``'s diagnostics.
    """
    bounds = minibatch_bounds(size, minibatch)
    states: list[RngState] = []
    parts: list[list[Tensor | None]] = []
    with torch.no_grad():
        for start, stop in bounds:
            states.append(RngState.capture())
            parts.append(list(embed(start, stop)))
    after = RngState.capture()
    views = [None if chunk[0] is None else torch.cat([c for c in chunk if c is not None]).requires_grad_()
             for chunk in zip(*parts, strict=True)]
    present = [v for v in views if v is not None]
    if not present:
        raise ValueError("embed() returned no embeddings")
    autocast = _Autocast.capture(present[0].device.type)
    with torch.enable_grad():
        loss, diagnostics = loss_fn(*views)
        cached = torch.autograd.grad(loss, present, allow_unused=True)
    cached = tuple(torch.zeros_like(v) if g is None else g for v, g in zip(present, cached, strict=True))

    def replay(grad_output: Tensor) -> None:
        for (start, stop), state in zip(bounds, states, strict=True):
            state.restore()
            with torch.enable_grad(), autocast():
                embedded = [e for e in embed(start, stop) if e is not None]
            grads = [g[start:stop] * grad_output.to(g.dtype) for g in cached]
            torch.autograd.backward(embedded, grads)
        after.restore()

    anchor = torch.zeros((), requires_grad=True)
    return _CachedBackward.apply(anchor, loss.detach(), replay), diagnostics
