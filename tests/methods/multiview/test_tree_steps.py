"""The activation and product helpers of the hand-written Tree-LSTM passes against their plain torch forms
(the passes themselves are checked against per-node recursion in ``test_cells.py``)."""

from __future__ import annotations

import torch

from sentsweep.methods.multiview.tree_steps import (
    doubled_rows,
    output_backward,
    sigmoid_backward,
    sigmoid_to_tanh,
    tanh_backward,
    tanh_into,
    weight_grad,
    with_ones,
)


def test_tanh_into_matches_torch_tanh_over_the_whole_range() -> None:
    x = torch.cat([torch.linspace(-30, 30, 100_001), torch.tensor([0.0, 1e-30, -1e-30, 88.0, -88.0])])
    out = torch.empty_like(x)
    assert tanh_into(x, out) is out
    assert float((out - torch.tanh(x)).abs().max()) < 1e-6
    strided = torch.empty(x.numel(), 3)[:, 1]  # a column of a wider buffer, as the passes write
    tanh_into(x, strided)
    assert float((strided - torch.tanh(x)).abs().max()) < 1e-6


def test_doubled_u_rows_and_one_sigmoid_give_the_tanh_gate() -> None:
    """``[i; u]`` from one product with the u rows doubled, then one sigmoid and ``sigmoid_to_tanh`` on u: the same
    gates as sigmoid(i) and tanh(u) from the plain product."""
    torch.manual_seed(0)
    H = 5
    W, b, x = torch.randn(2 * H, 7), torch.randn(2 * H), torch.randn(11, 7) * 3
    u_rows = slice(H, 2 * H)
    gates = torch.addmm(doubled_rows(b, u_rows), x, doubled_rows(W, u_rows).t()).sigmoid_()
    sigmoid_to_tanh(gates[:, u_rows])
    z = torch.addmm(b, x, W.t())
    assert torch.allclose(gates[:, :H], torch.sigmoid(z[:, :H]), atol=1e-6, rtol=0)
    assert torch.allclose(gates[:, H:], torch.tanh(z[:, H:]), atol=1e-6, rtol=0)
    assert torch.equal(doubled_rows(W, u_rows)[:H], W[:H])  # a copy: the weight itself is untouched
    s = torch.rand(4, 3)
    out = torch.empty(4, 3)
    assert sigmoid_to_tanh(s, out=out) is out and torch.allclose(out, 2 * s - 1)


def test_fused_backward_kernels_match_autograd() -> None:
    """``output_backward``: the gradients of ``h = o * tanh(c)`` (with ``dc`` arriving from above) for o's
    pre-activation and for c, against autograd in float64."""
    torch.manual_seed(1)
    z_o, c, dh, dc = (torch.randn(6, 4, dtype=torch.float64) for _ in range(4))
    z_o.requires_grad_(True)
    c.requires_grad_(True)
    o, tanh_c = torch.sigmoid(z_o), torch.tanh(c)
    g_o, g_c = torch.autograd.grad((dh * o * tanh_c).sum() + (dc * c).sum(), [z_o, c])
    d_o = torch.empty_like(dh)
    dc_total = output_backward(dh, dc, o.detach(), tanh_c.detach(), d_o)
    assert torch.allclose(d_o, g_o) and torch.allclose(dc_total, g_c)
    grad, s, t = torch.randn(6, 4), torch.rand(6, 4), torch.rand(6, 4) * 2 - 1
    out = torch.empty(6, 4)
    assert torch.allclose(sigmoid_backward(grad, s, out), grad * s * (1 - s))
    assert torch.allclose(tanh_backward(grad, t, out), grad * (1 - t * t))


def test_weight_grad_with_ones_gives_weight_and_bias_gradients() -> None:
    torch.manual_seed(2)
    x, dy = torch.randn(40, 6), torch.randn(40, 9)
    dWb = weight_grad(dy, with_ones(x))
    assert dWb.shape == (9, 7)
    assert torch.allclose(dWb[:, :-1], dy.t() @ x, atol=1e-5) and torch.allclose(dWb[:, -1], dy.sum(0), atol=1e-5)
