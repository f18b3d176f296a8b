"""Batched Tree-LSTM cells (Tai et al. 2015), one step per tree level for a whole batch.

:class:`AttentiveChildSumTreeLSTM` is the ``dep`` view's cell: the Child-Sum Tree-LSTM whose children sum
(eq. 1, ``h~_j = sum_k h_k``) is replaced by the soft-attention weighted sum of the multi-view paper,
eqs. 2-6::

    h~_j   = sum_{k in C(j)} alpha_kj h_k                    (2)
    q_j    = W_q x_j + b_q                                   (3)
    p_k    = W_p h_k + b_p                                   (4)
    a_kj   = q_j . p_k / (|q_j| |p_k|)                       (5)
    alpha_kj = softmax_k(a_1j ... a_nj)                      (6)

followed by Tai et al.'s Child-Sum gates: ``i, o, u`` from ``x_j`` and ``h~_j``, one forget gate per
child ``f_jk = sigmoid(W_f x_j + U_f h_k + b_f)``, ``c_j = i * u + sum_k f_jk * c_k``,
``h_j = o * tanh(c_j)``.

:class:`BinaryTreeLSTM` is the ``const`` view's cell: Tai et al.'s N-ary Tree-LSTM with N = 2 (separate
``U`` matrices for the left and right child, one forget gate per child); the words are the leaves and
internal nodes have no input. Leaves follow Tai et al.'s reference code: ``c = W_c x + b_c``,
``h = o * tanh(c)`` (no input or forget gate); internal nodes use ``U`` and the shared gate biases.

Both run level by level over :mod:`~sentsweep.methods.multiview.trees` batches, with the forward and
backward passes written out in :mod:`.child_sum_pass` and :mod:`.binary_pass` (fused gate products,
input projections in one product per level (dependency cell) or for all leaves (binary cell), one gather of the
children per level, state buffers allocated once, the attention batched over all children of a level, weight
gradients in one product each or accumulated level by level). They run in float32 with autocast off, so that
the written-out passes see one dtype.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sentsweep.methods.multiview.binary_pass import BinaryPass
from sentsweep.methods.multiview.child_sum_pass import ChildSumPass, segment_softmax
from sentsweep.methods.multiview.trees import BinaryBatch, DependencyBatch

__all__ = ["AttentiveChildSumTreeLSTM", "BinaryTreeLSTM", "segment_softmax"]


def _float32(x: Tensor) -> tuple[Tensor, torch.autocast]:
    """``x`` in float32 and a context that turns autocast off for the hand-written passes."""
    return x.float(), torch.autocast(device_type=x.device.type, enabled=False)


class AttentiveChildSumTreeLSTM(nn.Module):
    """Child-Sum Tree-LSTM with cosine soft attention over the children (eqs. 1-6; see module doc).

    ``forward(x, batch)``: ``x`` holds one input row per node in the batch's node order; returns the
    hidden and memory states ``(h, c)`` of every node, ``(nodes, hidden_size)`` each.
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.W = nn.Linear(input_size, 4 * hidden_size)  # i, o, u, f input terms and b_i, b_o, b_u, b_f
        self.U_iou = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.U_f = nn.Linear(hidden_size, hidden_size, bias=False)
        self.W_q = nn.Linear(input_size, hidden_size)  # eq. 3
        self.W_p = nn.Linear(hidden_size, hidden_size)  # eq. 4

    def forward(self, x: Tensor, batch: DependencyBatch) -> tuple[Tensor, Tensor]:
        x, no_autocast = _float32(x)
        with no_autocast:
            return ChildSumPass.apply(
                x, self.W.weight, self.W.bias, self.W_q.weight, self.W_q.bias, self.W_p.weight, self.W_p.bias,
                self.U_f.weight, self.U_iou.weight, batch.plan,
            )


class BinaryTreeLSTM(nn.Module):
    """Binary (N = 2) N-ary Tree-LSTM of Tai et al. 2015 with words at the leaves (see module doc).

    ``forward(x, batch)``: ``x`` holds one input row per leaf (the batch's flat tokens); returns
    ``(h, c)`` for every node (leaves first, then internal nodes), ``(nodes, hidden_size)`` each.
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.W = nn.Linear(input_size, 2 * hidden_size)  # leaves: [o; c] = W x + [b_o; b_c]
        self.U = nn.Linear(2 * hidden_size, 5 * hidden_size, bias=False)  # [h_L; h_R] -> i, o, u, f_L, f_R
        self.b_iou = nn.Parameter(torch.zeros(3 * hidden_size))
        self.b_f = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x: Tensor, batch: BinaryBatch) -> tuple[Tensor, Tensor]:
        """``x``: one row per leaf in the batch's flat token order."""
        x, no_autocast = _float32(x)
        with no_autocast:
            return BinaryPass.apply(
                x, self.W.weight, self.W.bias, self.U.weight, self.b_iou, self.b_f, batch.leaf_token,
                batch.children, batch.plan.level_sizes,
            )
