"""The batched pass of the binary (N = 2) Tree-LSTM, forward and backward written out (Tai et al. 2015).

Leaves (the words), as Tai et al.'s reference code (``BinaryTreeLSTM:new_leaf_module``)::

    c = W_c x + b_c            (no input or forget gate, no tanh on the update)
    h = o * tanh(c),  o = sigmoid(W_o x + b_o)

Internal nodes (no input), the N-ary Tree-LSTM with N = 2 and one forget gate per child::

    [i; o; u; f_L; f_R] = U [h_L; h_R] + [b_i; b_o; b_u; b_f; b_f]
    c = sigmoid(i) * tanh(u) + sigmoid(f_L) * c_L + sigmoid(f_R) * c_R
    h = sigmoid(o) * tanh(c)

Work per pass: one product for every leaf's ``[o; c]`` (before the level loop), per level one gather of the
children's ``[h_L; h_R]`` and ``[c_L; c_R]`` rows and one fused product for all five gates of every node of
the level. The backward pass takes one product per level for the children's gradients; ``dU`` and ``dW``
are one product each over every node (see :mod:`.tree_steps`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentsweep.methods.multiview.tree_steps import (
    doubled_rows,
    grad_buffer,
    level_rows,
    output_backward,
    sigmoid_backward,
    sigmoid_to_tanh,
    tanh_backward,
    tanh_into,
    weight_grad,
)


class BinaryPass(torch.autograd.Function):
    """``apply(x, W, b, U, b_iou, b_f, leaf_token, children, level_sizes) -> (h, c)`` of every node.

    ``x``: one row per token; ``W`` ``(2H, in)`` and ``b`` ``(2H,)`` map a leaf to ``[o; c]``; ``U``
    ``(5H, 2H)``; ``leaf_token``, ``children``, ``level_sizes`` as in
    :class:`~sentsweep.methods.multiview.trees.BinaryBatch`.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        x: Tensor,
        W: Tensor,
        b: Tensor,
        U: Tensor,
        b_iou: Tensor,
        b_f: Tensor,
        leaf_token: Tensor,
        children: Tensor,
        level_sizes: tuple[int, ...],
    ) -> tuple[Tensor, Tensor]:
        H = U.shape[1] // 2
        T, N = level_sizes[0], sum(level_sizes)
        x_leaf = x.index_select(0, leaf_token)
        c_rows = slice(H, 2 * H)  # tanh(c) = 2 sigmoid(2c) - 1: the product gives 2c
        leaf = torch.addmm(doubled_rows(b, c_rows), x_leaf, doubled_rows(W, c_rows).t())  # [o; 2c] of every leaf
        h, c, tanh_c = (x.new_empty(N, H) for _ in range(3))
        torch.mul(leaf[:, H:], 0.5, out=c[:T])
        leaf.sigmoid_()  # [o; sigmoid(2c)]
        sigmoid_to_tanh(leaf[:, H:], out=tanh_c[:T])
        torch.mul(leaf[:, :H], tanh_c[:T], out=h[:T])

        kids = children.reshape(-1)
        x_kids, c_kids = x.new_empty(N - T, 2 * H), x.new_empty(N - T, 2 * H)  # [h_L; h_R], [c_L; c_R]
        gates = x.new_empty(N - T, 5 * H)  # activated i, o, u, f_L, f_R
        u_rows = slice(2 * H, 3 * H)  # u's product gives 2z: one sigmoid for all five gates
        U_2u, bias = doubled_rows(U, u_rows), doubled_rows(torch.cat([b_iou, b_f, b_f]), u_rows)
        for _, rows in level_rows(level_sizes):
            r = slice(rows.start - T, rows.stop - T)
            n, pairs = rows.stop - rows.start, kids[2 * r.start : 2 * r.stop]
            torch.index_select(h, 0, pairs, out=x_kids[r].view(2 * n, H))
            torch.index_select(c, 0, pairs, out=c_kids[r].view(2 * n, H))
            g = torch.addmm(bias, x_kids[r], U_2u.t(), out=gates[r]).sigmoid_()
            sigmoid_to_tanh(g[:, u_rows])
            i, o, u, f_l, f_r = g.split(H, dim=1)
            c_n = torch.mul(i, u, out=c[rows])
            c_n.addcmul_(f_l, c_kids[r, :H]).addcmul_(f_r, c_kids[r, H:])
            torch.mul(o, tanh_into(c_n, tanh_c[rows]), out=h[rows])
        ctx.save_for_backward(x, W, U, leaf_token, kids, x_leaf, leaf, tanh_c, x_kids, c_kids, gates)
        ctx.level_sizes = level_sizes
        return h, c

    @staticmethod
    def backward(ctx: Any, grad_h: Tensor | None, grad_c: Tensor | None) -> tuple[Tensor | None, ...]:
        x, W, U, leaf_token, kids, x_leaf, leaf, tanh_c, x_kids, c_kids, gates = ctx.saved_tensors
        level_sizes = ctx.level_sizes
        H, T = U.shape[1] // 2, level_sizes[0]
        dh, dc = grad_buffer(grad_h, tanh_c), grad_buffer(grad_c, tanh_c)
        d_gates = torch.empty_like(gates)
        for _, rows in reversed(list(level_rows(level_sizes))):
            r = slice(rows.start - T, rows.stop - T)
            n, pairs = rows.stop - rows.start, kids[2 * r.start : 2 * r.stop]
            i, o, u = gates[r, : 3 * H].split(H, dim=1)
            f = gates[r, 3 * H :].view(n, 2, H)  # [f_L; f_R], as the children's [c_L; c_R] rows
            d_i, d_o, d_u = d_gates[r, : 3 * H].split(H, dim=1)
            dc_n = output_backward(dh[rows], dc[rows], o, tanh_c[rows], d_o)
            sigmoid_backward(dc_n * u, i, d_i)
            tanh_backward(dc_n * i, u, d_u)
            dc_kids = dc_n.unsqueeze(1)  # the same for both children
            sigmoid_backward(dc_kids * c_kids[r].view(n, 2, H), f, d_gates[r, 3 * H :].view(n, 2, H))
            dh.index_add_(0, pairs, (d_gates[r] @ U).view(2 * n, H))
            dc.index_add_(0, pairs, (dc_kids * f).view(2 * n, H))
        d_leaf = torch.empty_like(leaf)  # [o; c] pre-activations of the leaves
        dc_leaf = output_backward(dh[:T], dc[:T], leaf[:, :H], tanh_c[:T], d_leaf[:, :H])
        d_leaf[:, H:] = dc_leaf

        need = ctx.needs_input_grad
        dx = dW = db = dU = db_iou = db_f = None
        if need[0]:
            dx = torch.zeros_like(x).index_add_(0, leaf_token, d_leaf @ W)
        if need[1]:
            dW = weight_grad(d_leaf, x_leaf)
        if need[2]:
            db = d_leaf.sum(0)
        if need[3]:
            dU = d_gates.t() @ x_kids
        if need[4] or need[5]:
            d_bias = d_gates.sum(0)  # one contiguous sum: columns of a strided slice sum slowly
            db_iou, db_f = d_bias[: 3 * H], d_bias[3 * H : 4 * H] + d_bias[4 * H :]
        return dx, dW, db, dU, db_iou, db_f, None, None, None
