"""Pieces shared by the hand-written Tree-LSTM passes (:mod:`.child_sum_pass`, :mod:`.binary_pass`).

Both passes run level by level over a batch (see :class:`~sentsweep.methods.multiview.trees.LevelPlan`):
the states of every node live in ``(nodes, hidden)`` buffers allocated once per pass, each level reads
its children from them with one index operation and writes its own rows in place. Their backward passes
walk the levels top down with the gradients of every node in two ``(nodes, hidden)`` buffers (children
receive theirs with one ``index_add_`` per level) and compute most weight gradients with one matrix
product over all the levels at the end, from per-level inputs and pre-activation gradients kept in
buffers of their own (the Child-Sum cell's input weights: level by level, see :mod:`.child_sum_pass`).

The last step of every cell is Tai et al.'s ``h = o * tanh(c)``; :func:`output_backward` is its gradient.

Activations, forward and backward, are where a pass spends most of its time outside the matrix products (profile
of the binary cell's forward at hidden 150, one thread: a quarter of it). On the CPU ``torch.tanh`` costs about 3x
``torch.sigmoid`` per element, so the passes compute ``tanh(z) = 2 sigmoid(2 z) - 1`` (:func:`tanh_into`), and the
``u`` gate's product gives ``2 z`` directly (its weight rows doubled, :func:`doubled_rows`, exact in floating point)
so that one sigmoid over a whole contiguous gate block covers it, finished by :func:`sigmoid_to_tanh`. The backward
passes use torch's fused ``sigmoid_backward`` / ``tanh_backward`` kernels (one pass over memory instead of three or
four) and compute weight gradients in the faster orientation (:func:`weight_grad`).
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


def with_ones(x: Tensor) -> Tensor:
    """``[x, 1]``: with it, the weight gradient's product ``[x, 1]^T dY`` of an affine map ``W x + b`` gives the bias
    gradient as its last row (no separate column sum over ``dY``, a pass over all of it)."""
    return torch.cat([x, x.new_ones(x.shape[0], 1)], dim=1)


def weight_grad(d_out: Tensor, inputs: Tensor) -> Tensor:
    """The gradient ``d_out^T inputs`` of a weight ``(out, in)`` applied to ``inputs``, computed as
    ``(inputs^T d_out)^T``: the same product, 7-20% faster on one CPU thread (MKL) at the Child-Sum cell's shapes
    and the binary cell's leaves (many rows, few columns; not at the binary cell's ``dU``, which keeps
    ``d_gates^T x_kids``)."""
    return (inputs.t() @ d_out).t()


def doubled_rows(weight: Tensor, rows: slice) -> Tensor:
    """A copy of ``weight`` (a matrix or a bias) with ``rows`` times 2: a product with it gives ``2 z`` for the
    tanh gate ``z`` in those rows, ready for :func:`sigmoid_to_tanh` after the gates' common sigmoid."""
    out = weight.clone()
    out[rows] *= 2
    return out


def sigmoid_to_tanh(s: Tensor, out: Tensor | None = None) -> Tensor:
    """``tanh(z)`` from ``s = sigmoid(2 z)``: ``2 s - 1``, written into ``out`` (by default into ``s``)."""
    minus_one = s.new_full((), -1.0)  # -1 + 2 s in one pass (torch.add's alpha), not mul then sub
    return torch.add(minus_one, s, alpha=2, out=s if out is None else out)


def tanh_into(x: Tensor, out: Tensor) -> Tensor:
    """``tanh(x)`` written into ``out``; on the CPU as ``2 sigmoid(2 x) - 1`` (2.5x faster than ``torch.tanh`` with
    one thread, within 1e-6 of it), elsewhere ``torch.tanh``."""
    if x.device.type != "cpu":
        return torch.tanh(x, out=out)
    return sigmoid_to_tanh(torch.add(x, x, out=out).sigmoid_())


def output_backward(dh: Tensor, dc: Tensor, o: Tensor, tanh_c: Tensor, d_o: Tensor) -> Tensor:
    """Gradient of ``h = o * tanh(c)`` for the activated output gate ``o``: writes the gradient of o's
    pre-activation into ``d_o`` and returns the total gradient of ``c`` (``dc`` from above plus through h)."""
    sigmoid_backward(dh * tanh_c, o, d_o)
    return torch.ops.aten.tanh_backward(dh * o, tanh_c).add_(dc)


def sigmoid_backward(grad: Tensor, gate: Tensor, out: Tensor) -> Tensor:
    """Gradient of a sigmoid's pre-activation from its output ``gate``, written into ``out``."""
    return torch.ops.aten.sigmoid_backward.grad_input(grad, gate, grad_input=out)


def tanh_backward(grad: Tensor, value: Tensor, out: Tensor) -> Tensor:
    """Gradient of a tanh's pre-activation from its output ``value``, written into ``out``."""
    return torch.ops.aten.tanh_backward.grad_input(grad, value, grad_input=out)
