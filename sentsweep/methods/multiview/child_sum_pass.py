"""The batched pass of the attentive Child-Sum Tree-LSTM, forward and backward written out.

The equations are in :mod:`~sentsweep.methods.multiview.cells` (multi-view paper eqs. 2-6, Tai et al.'s
Child-Sum gates). Work per pass, per level: one product for the level's input terms ``[W_i; W_o; W_u; W_f; W_q] x``
(computed when the level starts, so that it is read from cache; the leaves' level takes only ``W_i, W_o, W_u``: a
leaf has no forget gate and attends to nothing), one gather of the children's ``h``, one product
``[W_p; U_f] h_k`` for all children of the level, the attention (cosine, softmax within each parent, weighted sum)
over all of them at once, one product ``U_iou h~`` for the level's nodes and one ``index_add`` per sum over
children. The backward pass mirrors it level by level, with each level's share of ``dx`` and ``[dW; dW_q]`` taken
as soon as its input terms' gradients are complete; the other weight gradients are one product each over all nodes
or all children (see :mod:`.tree_steps`). The forward pass keeps, per child, what the backward pass would gather
again (its ``c``, its parent's ``f`` and ``q`` terms), and every ``index_add`` adds a contiguous source into a
contiguous target: with a strided one torch takes a generic kernel about 10x slower.
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
    with_ones,
)

EPS = 1e-8  # as torch.nn.functional.cosine_similarity: each norm is at least EPS


def segment_softmax(scores: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    """Softmax of ``scores`` within each segment (``segment[e]`` in ``0..num_segments-1``)."""
    peak = torch.full((num_segments,), float("-inf"), dtype=scores.dtype, device=scores.device)
    peak = peak.scatter_reduce(0, segment, scores.detach(), reduce="amax", include_self=True)
    exp = torch.exp(scores - peak.index_select(0, segment))
    total = torch.zeros(num_segments, dtype=scores.dtype, device=scores.device).index_add(0, segment, exp)
    return exp / total.index_select(0, segment)


def _segment_sum(values: Tensor, segment: Tensor, num_segments: int) -> Tensor:
    return values.new_zeros((num_segments, *values.shape[1:])).index_add_(0, segment, values)


class ChildSumPass(torch.autograd.Function):
    """``apply(x, W, b_W, W_q, b_q, W_p, b_p, U_f, U_iou, plan) -> (h, c)`` of every node.

    ``x``: one input row per node in the plan's node order; ``W`` ``(4H, in)`` gives the i, o, u, f input
    terms, ``W_q`` ``(H, in)`` eq. 3, ``W_p`` ``(H, H)`` eq. 4, ``U_f`` ``(H, H)``, ``U_iou`` ``(3H, H)``;
    ``plan``: :class:`~sentsweep.methods.multiview.trees.LevelPlan`.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        x: Tensor,
        W: Tensor,
        b_W: Tensor,
        W_q: Tensor,
        b_q: Tensor,
        W_p: Tensor,
        b_p: Tensor,
        U_f: Tensor,
        U_iou: Tensor,
        plan: Any,
    ) -> tuple[Tensor, Tensor]:
        H, L0, N = U_f.shape[0], plan.level_sizes[0], plan.num_nodes
        E = plan.edge_offsets[-1]
        W_in, W_pf = torch.cat([W, W_q]), torch.cat([W_p, U_f])
        b_pf = torch.cat([b_p, torch.zeros_like(b_p)])
        u_rows = slice(2 * H, 3 * H)  # u's terms come as 2z: one sigmoid for i, o, u (see tree_steps)
        W_2u, b_2u, U_iou_2u = (doubled_rows(w, u_rows) for w in (W_in, torch.cat([b_W, b_q]), U_iou))

        def input_terms(rows: slice, terms: int = 5) -> Tensor:
            """The first ``terms`` of the i, o, 2u, f, q terms of a level's nodes, computed when the level starts:
            a level's product is read while still in cache (one product of all nodes was read back from memory,
            9 ms of 56 ms at hidden 300)."""
            return torch.addmm(b_2u[: terms * H], x[rows], W_2u[: terms * H].t())

        q_norm = x.new_empty(N)  # |q| of the nodes with children
        gates = x.new_empty(N, 3 * H)  # activated i, o, u
        h, c, tanh_c = (x.new_empty(N, H) for _ in range(3))
        h_kids, pf = x.new_empty(E, H), x.new_empty(E, 2 * H)  # children's h; p (eq. 4) and activated f
        c_kids, fq = x.new_empty(E, H), x.new_empty(E, 2 * H)  # children's c; their parents' f and q terms
        score, alpha, p_norm = x.new_empty(E), x.new_empty(E), x.new_empty(E)
        h_tilde = x.new_empty(N - L0, H)  # eq. 2, nodes with children

        torch.sigmoid(input_terms(slice(0, L0), terms=3), out=gates[:L0])  # leaves: h~ = 0, no f or q terms
        sigmoid_to_tanh(gates[:L0, u_rows])
        torch.mul(gates[:L0, :H], gates[:L0, u_rows], out=c[:L0])
        torch.mul(gates[:L0, H : 2 * H], tanh_into(c[:L0], tanh_c[:L0]), out=h[:L0])
        for s, rows in level_rows(plan.level_sizes):
            e, n = slice(plan.edge_offsets[s], plan.edge_offsets[s + 1]), rows.stop - rows.start
            kid, parent = plan.edge_child[e], plan.edge_parent[e]
            inputs = input_terms(rows)
            torch.linalg.vector_norm(inputs[:, 4 * H :], dim=1, out=q_norm[rows]).clamp_min_(EPS)
            h_k = torch.index_select(h, 0, kid, out=h_kids[e])
            torch.addmm(b_pf, h_k, W_pf.t(), out=pf[e])
            p, f = pf[e, :H], pf[e, H:]
            torch.index_select(inputs[:, 3 * H :], 0, parent, out=fq[e])
            q = fq[e, H:]
            torch.linalg.vector_norm(p, dim=1, out=p_norm[e]).clamp_min_(EPS)
            torch.div((q * p).sum(1), q_norm[rows].index_select(0, parent) * p_norm[e], out=score[e])  # eq. 5
            a = alpha[e]
            a.copy_(segment_softmax(score[e], parent, n))  # eq. 6
            t = h_tilde[rows.start - L0 : rows.stop - L0]
            t.zero_().index_add_(0, parent, a.unsqueeze(1) * h_k)  # eq. 2
            g = torch.addmm(inputs[:, : 3 * H], t, U_iou_2u.t(), out=gates[rows]).sigmoid_()
            sigmoid_to_tanh(g[:, u_rows])
            f.add_(fq[e, :H]).sigmoid_()
            c_n = torch.mul(g[:, :H], g[:, 2 * H :], out=c[rows])
            c_n.index_add_(0, parent, f * torch.index_select(c, 0, kid, out=c_kids[e]))
            torch.mul(g[:, H : 2 * H], tanh_into(c_n, tanh_c[rows]), out=h[rows])
        ctx.save_for_backward(x, W_in, W_pf, U_iou, q_norm, gates, tanh_c, h_kids, c_kids, pf, fq, score, alpha,
                              p_norm, h_tilde)
        ctx.plan = plan
        return h, c

    @staticmethod
    def backward(ctx: Any, grad_h: Tensor | None, grad_c: Tensor | None) -> tuple[Tensor | None, ...]:
        (x, W_in, W_pf, U_iou, q_norm, gates, tanh_c, h_kids, c_kids, pf, fq, score, alpha, p_norm,
         h_tilde) = ctx.saved_tensors
        plan = ctx.plan
        H, L0 = U_iou.shape[1], plan.level_sizes[0]
        dh, dc = grad_buffer(grad_h, tanh_c), grad_buffer(grad_c, tanh_c)
        d_inputs = x.new_empty(x.shape[0], 5 * H)  # gradients of the i, o, u (= of U_iou h~ too), f and q terms
        d_pf = torch.empty_like(pf)  # gradients of p and of f's pre-activation, per child
        need = ctx.needs_input_grad
        dx = torch.empty_like(x) if need[0] else None
        x1 = with_ones(x)  # the bias gradients come with the weight gradients' product
        dWb_in_t = x.new_zeros(x.shape[1] + 1, 5 * H) if any(need[1:5]) else None  # [dW, db; dW_q, db_q]^T

        def input_grads(rows: slice, terms: int = 5) -> None:
            """A level's share of ``dx`` and ``[dW; dW_q]`` through its first ``terms`` input terms, once their
            gradients are complete: the product reads them while still in cache (after the level loop they came
            back from memory)."""
            cols = slice(0, terms * H)
            if dx is not None:
                torch.mm(d_inputs[rows, cols], W_in[cols], out=dx[rows])
            if dWb_in_t is not None:
                dWb_in_t[:, cols].addmm_(x1[rows].t(), d_inputs[rows, cols])

        for s, rows in [*level_rows(plan.level_sizes, first=0)][::-1]:
            d_in, n = d_inputs[rows], rows.stop - rows.start
            i, o, u = gates[rows].split(H, dim=1)
            dc_n = output_backward(dh[rows], dc[rows], o, tanh_c[rows], d_in[:, H : 2 * H])
            sigmoid_backward(dc_n * u, i, d_in[:, :H])
            tanh_backward(dc_n * i, u, d_in[:, 2 * H : 3 * H])
            if s == 0:
                input_grads(rows, terms=3)  # leaves have no forget or attention terms
                break
            e = slice(plan.edge_offsets[s], plan.edge_offsets[s + 1])
            kid, parent = plan.edge_child[e], plan.edge_parent[e]
            h_k, a, p, f, q = h_kids[e], alpha[e], pf[e, :H], pf[e, H:], fq[e, H:]
            # per child: gradients of the parent's f and q terms, summed per parent below with one index_add
            # (whose source and target must be contiguous: a strided one takes the 10x slower generic kernel)
            d_fq = x.new_empty(e.stop - e.start, 2 * H)
            df, dq = d_fq[:, :H], d_fq[:, H:]
            # forget gates: c += sum_k f_k * c_k
            dc_e = dc_n.index_select(0, parent)
            sigmoid_backward(dc_e * c_kids[e], f, df)
            dc.index_add_(0, kid, dc_e.mul_(f))
            d_pf[e, H:] = df
            # attention: h~ = sum_k alpha_k h_k (eq. 2), alpha = softmax(score) (eq. 6), score = cos(q, p) (eq. 5)
            dt_e = (d_in[:, : 3 * H] @ U_iou).index_select(0, parent)
            d_alpha = (dt_e * h_k).sum(1)
            d_h_k = dt_e.mul_(a.unsqueeze(1))
            d_score = a * (d_alpha - _segment_sum(a * d_alpha, parent, n).index_select(0, parent))
            q_n, p_n = q_norm[rows].index_select(0, parent), p_norm[e]
            d_cos = d_score * score[e]
            scale = (d_score / (q_n * p_n)).unsqueeze(1)
            torch.mul(p, scale, out=dq).addcmul_(q, (d_cos / (q_n * q_n)).unsqueeze(1), value=-1)
            torch.mul(q, scale, out=d_pf[e, :H]).addcmul_(p, (d_cos / (p_n * p_n)).unsqueeze(1), value=-1)
            d_in[:, 3 * H :] = _segment_sum(d_fq, parent, n)
            d_h_k.addmm_(d_pf[e], W_pf)
            dh.index_add_(0, kid, d_h_k)
            input_grads(rows)

        dW_in = db_in = dW_pf = db_p = dU_iou = None
        if dWb_in_t is not None:
            dW_in, db_in = dWb_in_t[:-1].t(), dWb_in_t[-1]
        if need[5] or need[7]:
            dW_pf = weight_grad(d_pf, h_kids)
        if need[6]:
            db_p = d_pf.sum(0)[:H]  # one contiguous sum: columns of a strided slice sum slowly
        if need[8]:
            dU_iou = weight_grad(d_inputs[L0:, : 3 * H], h_tilde)
        return (
            dx,
            None if dW_in is None else dW_in[: 4 * H],
            None if db_in is None else db_in[: 4 * H],
            None if dW_in is None else dW_in[4 * H :],
            None if db_in is None else db_in[4 * H :],
            None if dW_pf is None else dW_pf[:H],
            db_p,
            None if dW_pf is None else dW_pf[H:],
            dU_iou,
            None,
        )
