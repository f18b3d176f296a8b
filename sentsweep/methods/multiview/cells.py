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
``U`` matrices for the left and right child, one forget gate per child); the words are the leaves
(``h_L = h_R = 0``) and internal nodes have no input (``x = 0``), so leaves use ``W`` and internal nodes
``U``; the biases are shared.

Both run level by level over :mod:`~sentsweep.methods.multiview.trees` batches: the input projections
of a level in one matrix product, its children's states read as the concatenation of the groups the
lower levels were split into (see :class:`~sentsweep.methods.multiview.trees.LevelPlan`), one
``index_add`` per sum over children (and a scatter-max for the attention softmax), and one cell update
for every node of the level across the batch. States are never written into or gathered from a global
``(nodes, hidden)`` buffer, so the backward pass stays linear in the number of nodes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentsweep.methods.multiview.trees import BinaryBatch, DependencyBatch


def segment_softmax(scores: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    """Softmax of ``scores`` within each segment (``segment[e]`` in ``0..num_segments-1``)."""
    peak = torch.full((num_segments,), float("-inf"), dtype=scores.dtype, device=scores.device)
    peak = peak.scatter_reduce(0, segment, scores.detach(), reduce="amax", include_self=True)
    exp = torch.exp(scores - peak.index_select(0, segment))
    total = torch.zeros(num_segments, dtype=scores.dtype, device=scores.device).index_add(0, segment, exp)
    return exp / total.index_select(0, segment)


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
        H, plan = self.hidden_size, batch.plan
        pieces: dict[tuple[int, int], tuple[Tensor, Tensor]] = {}
        out_h, out_c = [], []
        for s, x_s in enumerate(x.split(list(plan.level_sizes))):
            w_i, w_o, w_u, w_f = self.W(x_s).split(H, dim=-1)
            if s == 0:  # leaves: no children, h~ = 0 and no forget terms
                i, o, u = torch.sigmoid(w_i), torch.sigmoid(w_o), torch.tanh(w_u)
                c = i * u
            else:
                n = x_s.shape[0]
                kids = [pieces.pop((r, s)) for r in range(s) if (r, s) in pieces]
                h_k = torch.cat([k[0] for k in kids])
                c_k = torch.cat([k[1] for k in kids])
                parent = plan.edge_parent[plan.edge_offsets[s] : plan.edge_offsets[s + 1]]
                q = self.W_q(x_s).index_select(0, parent)  # eq. 3, at each child's parent
                p = self.W_p(h_k)  # eq. 4
                score = F.cosine_similarity(q, p, dim=-1, eps=1e-8)  # eq. 5
                alpha = segment_softmax(score, parent, n)  # eq. 6
                weighted = (alpha.unsqueeze(-1) * h_k).to(h_k.dtype)
                h_tilde = h_k.new_zeros(n, H).index_add(0, parent, weighted)  # eq. 2
                u_i, u_o, u_u = self.U_iou(h_tilde).split(H, dim=-1)
                i, o, u = torch.sigmoid(w_i + u_i), torch.sigmoid(w_o + u_o), torch.tanh(w_u + u_u)
                f = torch.sigmoid(w_f.index_select(0, parent) + self.U_f(h_k))
                c = i * u + c_k.new_zeros(n, H).index_add(0, parent, (f * c_k).to(c_k.dtype))
            h = o * torch.tanh(c)
            _split_into_groups(pieces, s, h, c, plan.groups[s])
            out_h.append(h)
            out_c.append(c)
        return torch.cat(out_h), torch.cat(out_c)


def _split_into_groups(
    pieces: dict[tuple[int, int], tuple[Tensor, Tensor]],
    level: int,
    h: Tensor,
    c: Tensor,
    groups: tuple[tuple[int, int], ...],
) -> None:
    """Keep a level's states as the groups its parent levels will read (roots, level -1, dropped)."""
    sizes = [size for _, size in groups]
    for (target, _), h_part, c_part in zip(groups, h.split(sizes), c.split(sizes), strict=True):
        if target >= 0:
            pieces[(level, target)] = (h_part, c_part)


class BinaryTreeLSTM(nn.Module):
    """Binary (N = 2) N-ary Tree-LSTM of Tai et al. 2015 with words at the leaves (see module doc).

    ``forward(x, batch)``: ``x`` holds one input row per leaf (the batch's flat tokens); returns
    ``(h, c)`` for every node (leaves first, then internal nodes), ``(nodes, hidden_size)`` each.
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.W = nn.Linear(input_size, 3 * hidden_size, bias=False)  # leaves: i, o, u
        self.U = nn.Linear(2 * hidden_size, 5 * hidden_size, bias=False)  # [h_L; h_R] -> i, o, u, f_L, f_R
        self.b_iou = nn.Parameter(torch.zeros(3 * hidden_size))
        self.b_f = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x: Tensor, batch: BinaryBatch) -> tuple[Tensor, Tensor]:
        """``x``: one row per leaf in the batch's flat token order."""
        H, plan, T = self.hidden_size, batch.plan, batch.num_leaves
        pieces: dict[tuple[int, int], tuple[Tensor, Tensor]] = {}
        i, o, u = (self.W(x.index_select(0, batch.leaf_token)) + self.b_iou).split(H, dim=-1)
        c = torch.sigmoid(i) * torch.tanh(u)
        h = torch.sigmoid(o) * torch.tanh(c)
        _split_into_groups(pieces, 0, h, c, plan.groups[0])
        out_h, out_c = [h], [c]
        start = T
        for s in range(1, plan.num_levels):
            n = plan.level_sizes[s]
            kids = [pieces.pop((r, s)) for r in range(s) if (r, s) in pieces]
            h_k = torch.cat([k[0] for k in kids])
            c_k = torch.cat([k[1] for k in kids])
            left = batch.left_position[start - T : start - T + n]
            right = batch.right_position[start - T : start - T + n]
            z = self.U(torch.cat([h_k.index_select(0, left), h_k.index_select(0, right)], dim=-1))
            i, o, u = (z[:, : 3 * H] + self.b_iou).split(H, dim=-1)
            f_l, f_r = (z[:, 3 * H :] + self.b_f.repeat(2)).split(H, dim=-1)
            c = (
                torch.sigmoid(i) * torch.tanh(u)
                + torch.sigmoid(f_l) * c_k.index_select(0, left)
                + torch.sigmoid(f_r) * c_k.index_select(0, right)
            )
            h = torch.sigmoid(o) * torch.tanh(c)
            _split_into_groups(pieces, s, h, c, plan.groups[s])
            out_h.append(h)
            out_c.append(c)
            start += n
        return torch.cat(out_h), torch.cat(out_c)
