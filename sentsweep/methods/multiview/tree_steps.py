"""Pieces shared by the hand-written Tree-LSTM passes (:mod:`.child_sum_pass`, :mod:`.binary_pass`).

Both passes run level by level over a batch (see :class:`~sentsweep.methods.multiview.trees.LevelPlan`):
the states of every node live in ``(nodes, hidden)`` buffers allocated once per pass, each level reads
its children from them with one index operation and writes its own rows in place. Their backward passes
walk the levels top down with the gradients of every node in two ``(nodes, hidden)`` buffers (children
receive theirs with one ``index_add_`` per level) and compute each weight gradient with one matrix
product over all the levels at the end, from per-level inputs and pre-activation gradients kept in
buffers of their own.

The last step of every cell is Tai et al.'s ``h = o * tanh(c)``; :func:`output_backward` is its gradient.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor


def level_rows(level_sizes: tuple[int, ...], first: int = 1) -> Iterator[tuple[int, slice]]:
    """``(level, node rows)`` of the levels ``first..`` in order."""
    start = sum(level_sizes[:first])
    for s in range(first, len(level_sizes)):
        yield s, slice(start, start + level_sizes[s])
        start += level_sizes[s]


def grad_buffer(grad: Tensor | None, like: Tensor) -> Tensor:
    """A writable, contiguous copy of an incoming output gradient (zeros when autograd passed none)."""
    buffer = torch.empty_like(like, memory_format=torch.contiguous_format)
    if grad is None:
        return buffer.zero_()
    return buffer.copy_(grad)


def output_backward(dh: Tensor, dc: Tensor, o: Tensor, tanh_c: Tensor, d_o: Tensor) -> Tensor:
    """Gradient of ``h = o * tanh(c)`` for the activated output gate ``o``: writes the gradient of o's
    pre-activation into ``d_o`` and returns the total gradient of ``c`` (``dc`` from above plus through h)."""
    torch.mul(dh * tanh_c, o * (1 - o), out=d_o)
    return torch.addcmul(dc, dh * o, 1 - tanh_c * tanh_c)


def sigmoid_backward(grad: Tensor, gate: Tensor, out: Tensor) -> Tensor:
    """Gradient of a sigmoid's pre-activation from its output ``gate``, written into ``out``."""
    return torch.mul(grad, gate * (1 - gate), out=out)


def tanh_backward(grad: Tensor, value: Tensor, out: Tensor) -> Tensor:
    """Gradient of a tanh's pre-activation from its output ``value``, written into ``out``."""
    return torch.mul(grad, 1 - value * value, out=out)
