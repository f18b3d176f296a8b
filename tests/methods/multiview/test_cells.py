"""Batched Tree-LSTMs against a straightforward per-node recursive implementation, forward and gradients.

The references below are written from the equations (Tai et al. 2015; multi-view paper eqs. 1-6), one
node at a time, recursing into the children; they share only the parameters with the batched cells.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import Tensor

from sentsweep.methods.multiview.cells import AttentiveChildSumTreeLSTM, BinaryTreeLSTM, segment_softmax
from sentsweep.methods.multiview.model import xavier_init
from sentsweep.methods.multiview.trees import collate_binary, collate_dependency

TOL = 1e-5


# -- random trees ---------------------------------------------------------------------------------
def random_heads(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random dependency tree over n tokens: a random order, each token attached to an earlier one."""
    order = rng.permutation(n)
    heads = np.full(n, -1, dtype=np.int64)
    for pos in range(1, n):
        heads[order[pos]] = order[rng.integers(0, pos)]
    return heads


def random_binary(n: int, rng: np.random.Generator) -> tuple[int, np.ndarray, np.ndarray]:
    """A random binary tree over n leaves in the (n, left, right) post-order format."""
    left: list[int] = []
    right: list[int] = []

    def build(lo: int, hi: int) -> int:
        if hi - lo == 1:
            return lo
        cut = int(rng.integers(lo + 1, hi))
        a, b = build(lo, cut), build(cut, hi)
        left.append(a)
        right.append(b)
        return n + len(left) - 1

    build(0, n)
    return n, np.array(left, dtype=np.int64), np.array(right, dtype=np.int64)


# -- per-node recursive references --------------------------------------------------------------------
def ref_child_sum(cell: AttentiveChildSumTreeLSTM, x: Tensor, heads: np.ndarray) -> Tensor:
    """The root hidden state of one dependency tree, node by node (eqs. 1-6 + Child-Sum gates)."""
    H = cell.hidden_size
    kids = {j: [k for k in range(len(heads)) if heads[k] == j] for j in range(len(heads))}

    def node(j: int) -> tuple[Tensor, Tensor]:
        states = [node(k) for k in kids[j]]
        w = cell.W.weight @ x[j] + cell.W.bias
        w_i, w_o, w_u, w_f = w[:H], w[H : 2 * H], w[2 * H : 3 * H], w[3 * H :]
        h_tilde = torch.zeros(H)
        if states:
            q = cell.W_q.weight @ x[j] + cell.W_q.bias  # eq. 3
            scores = []
            for h_k, _ in states:
                p = cell.W_p.weight @ h_k + cell.W_p.bias  # eq. 4
                scores.append((q @ p) / (q.norm() * p.norm()))  # eq. 5
            alpha = torch.softmax(torch.stack(scores), dim=0)  # eq. 6
            for a_k, (h_k, _) in zip(alpha, states, strict=True):
                h_tilde = h_tilde + a_k * h_k  # eq. 2
        u = cell.U_iou.weight @ h_tilde
        i = torch.sigmoid(w_i + u[:H])
        o = torch.sigmoid(w_o + u[H : 2 * H])
        g = torch.tanh(w_u + u[2 * H :])
        c = i * g
        for h_k, c_k in states:
            c = c + torch.sigmoid(w_f + cell.U_f.weight @ h_k) * c_k
        return o * torch.tanh(c), c

    root = int(np.nonzero(heads < 0)[0][0])
    return node(root)[0]


def ref_binary(cell: BinaryTreeLSTM, x: Tensor, tree: tuple[int, np.ndarray, np.ndarray]) -> Tensor:
    """The root hidden state of one binary tree, node by node (Tai et al.'s N-ary Tree-LSTM, N = 2)."""
    H = cell.hidden_size
    n, left, right = tree
    U_l, U_r = cell.U.weight[:, :H], cell.U.weight[:, H:]

    def node(j: int) -> tuple[Tensor, Tensor]:
        if j < n:  # leaf: input x, no children
            z = cell.W.weight @ x[j] + cell.b_iou
            i, o, u = torch.sigmoid(z[:H]), torch.sigmoid(z[H : 2 * H]), torch.tanh(z[2 * H :])
            c = i * u
            return o * torch.tanh(c), c
        (h_l, c_l), (h_r, c_r) = node(int(left[j - n])), node(int(right[j - n]))
        z = U_l @ h_l + U_r @ h_r
        i = torch.sigmoid(z[:H] + cell.b_iou[:H])
        o = torch.sigmoid(z[H : 2 * H] + cell.b_iou[H : 2 * H])
        u = torch.tanh(z[2 * H : 3 * H] + cell.b_iou[2 * H :])
        f_l = torch.sigmoid(z[3 * H : 4 * H] + cell.b_f)
        f_r = torch.sigmoid(z[4 * H :] + cell.b_f)
        c = i * u + f_l * c_l + f_r * c_r
        return o * torch.tanh(c), c

    return node(n + len(left) - 1 if len(left) else 0)[0]


def _randomise_biases(module: torch.nn.Module, seed: int) -> None:
    """Biases are 0 at init (the paper); make them non-zero so the test covers them too."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in module.named_parameters():
            if param.ndim == 1 or name.startswith("b_"):
                param.copy_(torch.randn(param.shape, generator=gen) * 0.3)


def _grads(module: torch.nn.Module, x: Tensor) -> list[Tensor]:
    return [p.grad.clone() for p in module.parameters()] + [x.grad.clone()]


def _zero(module: torch.nn.Module, x: Tensor) -> None:
    module.zero_grad(set_to_none=False)
    x.grad = None


# -- tests ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_child_sum_batched_equals_recursive_forward_and_gradients(seed: int) -> None:
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    sizes = [1, 2, 3, *rng.integers(4, 18, size=9).tolist()]
    heads = [random_heads(int(n), rng) for n in sizes]
    cell = AttentiveChildSumTreeLSTM(7, 6)
    xavier_init(cell)
    _randomise_biases(cell, seed)
    tokens = torch.randn(sum(sizes), 7, requires_grad=True)
    weights = torch.randn(len(sizes), 6)

    batch = collate_dependency(heads)
    h, _ = cell(tokens.index_select(0, batch.node_token), batch)
    batched = h.index_select(0, batch.roots)
    (batched * weights).sum().backward()
    g_batched = _grads(cell, tokens)

    _zero(cell, tokens)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    reference = torch.stack(
        [ref_child_sum(cell, tokens[s : s + n], hd) for s, n, hd in zip(starts, sizes, heads, strict=True)]
    )
    (reference * weights).sum().backward()
    g_reference = _grads(cell, tokens)

    assert torch.allclose(batched, reference, atol=TOL, rtol=0)
    for a, b in zip(g_batched, g_reference, strict=True):
        assert torch.allclose(a, b, atol=TOL, rtol=0), float((a - b).abs().max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_binary_batched_equals_recursive_forward_and_gradients(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    torch.manual_seed(seed)
    sizes = [1, 2, 3, *rng.integers(4, 20, size=9).tolist()]
    trees = [random_binary(int(n), rng) for n in sizes]
    cell = BinaryTreeLSTM(5, 8)
    xavier_init(cell)
    _randomise_biases(cell, seed)
    tokens = torch.randn(sum(sizes), 5, requires_grad=True)
    weights = torch.randn(len(sizes), 8)

    batch = collate_binary(trees)
    h, _ = cell(tokens, batch)
    batched = h.index_select(0, batch.roots)
    (batched * weights).sum().backward()
    g_batched = _grads(cell, tokens)

    _zero(cell, tokens)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    reference = torch.stack(
        [ref_binary(cell, tokens[s : s + n], t) for s, n, t in zip(starts, sizes, trees, strict=True)]
    )
    (reference * weights).sum().backward()
    g_reference = _grads(cell, tokens)

    assert torch.allclose(batched, reference, atol=TOL, rtol=0)
    for a, b in zip(g_batched, g_reference, strict=True):
        assert torch.allclose(a, b, atol=TOL, rtol=0), float((a - b).abs().max())


def test_one_step_per_level_not_per_node() -> None:
    """The cell runs its recurrent matrices once per level, however many nodes the batch holds."""
    rng = np.random.default_rng(5)
    heads = [random_heads(int(n), rng) for n in rng.integers(1, 30, size=64)]
    cell = AttentiveChildSumTreeLSTM(4, 4)
    calls = []
    cell.U_iou.register_forward_hook(lambda *args: calls.append(1))
    batch = collate_dependency(heads)
    cell(torch.randn(batch.num_nodes, 4), batch)
    assert len(calls) == batch.num_levels - 1 < batch.num_nodes / 10

    trees = [random_binary(int(n), rng) for n in rng.integers(1, 30, size=64)]
    bcell = BinaryTreeLSTM(4, 4)
    bcalls = []
    bcell.U.register_forward_hook(lambda *args: bcalls.append(1))
    bbatch = collate_binary(trees)
    bcell(torch.randn(bbatch.num_leaves, 4), bbatch)
    assert len(bcalls) == bbatch.num_levels - 1


def test_levels_are_heights_and_groups_by_parent_level() -> None:
    """Level of a node = its height (leaves 0): max height + 1 steps; within a level, nodes are grouped
    by their parent's level (roots last)."""
    heads = [np.array([1, -1, 1, 2]), np.array([-1])]  # 0<-1->2->3 (heights 0,2,1,0); a one-word tree
    batch = collate_dependency(heads)
    assert batch.plan.level_sizes == (3, 1, 1) and batch.num_levels == 3
    assert batch.node_token.tolist() == [3, 0, 4, 2, 1]
    assert batch.plan.groups[0] == ((1, 1), (2, 1), (-1, 1))
    assert batch.node_token[batch.roots].tolist() == [1, 4]
    tree = (3, np.array([0, 3]), np.array([1, 2]))  # ((0 1) 2)
    b = collate_binary([tree, (1, np.array([], np.int64), np.array([], np.int64))])
    assert b.num_leaves == 4 and b.plan.level_sizes == (4, 1, 1) and b.roots.tolist() == [5, 3]
    assert b.leaf_token.tolist() == [0, 1, 2, 3]
    # level 2's children are [leaf 2 (group (0, 2)), node (0 1) (group (1, 2))]: left is the second
    assert b.left_position.tolist() == [0, 1] and b.right_position.tolist() == [1, 0]


def test_segment_softmax_matches_per_segment_softmax() -> None:
    scores = torch.tensor([0.3, -1.0, 2.0, 0.5, 0.5, 7.0])
    segment = torch.tensor([0, 0, 1, 1, 1, 2])
    out = segment_softmax(scores, segment, 3)
    expected = torch.cat([scores[:2].softmax(0), scores[2:5].softmax(0), scores[5:].softmax(0)])
    assert torch.allclose(out, expected)
