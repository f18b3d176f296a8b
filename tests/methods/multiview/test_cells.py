"""Batched Tree-LSTMs against a straightforward per-node recursive implementation, forward and gradients.

The references below are written from the equations (Tai et al. 2015; multi-view paper eqs. 1-6), one
node at a time, recursing into the children; they share only the parameters with the batched cells.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode

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
        if j < n:  # leaf, as Tai et al.'s code: c = W_c x + b_c, h = o * tanh(c)
            z = cell.W.weight @ x[j] + cell.W.bias
            o, c = torch.sigmoid(z[:H]), z[H:]
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


class _CountProducts(TorchDispatchMode):
    """Counts the matrix products (``mm``, ``addmm``, ``addmm_``) torch runs while active."""

    def __init__(self) -> None:
        super().__init__()
        self.products = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        if func.overloadpacket in (torch.ops.aten.mm, torch.ops.aten.addmm, torch.ops.aten.addmm_):
            self.products += 1
        return func(*args, **(kwargs or {}))


def test_products_per_level_not_per_node() -> None:
    """Forward: per level one fused product for the children (Child-Sum: [W_p; U_f]) and one for the gates
    (Child-Sum: and one for the level's input terms; binary: the leaves' in one product); backward: one product
    per level for the children's gradients (Child-Sum: two, and two for the level's share of dx and [dW; dW_q]),
    and one per remaining weight matrix over all levels."""
    rng = np.random.default_rng(5)
    heads = [random_heads(int(n), rng) for n in rng.integers(1, 30, size=64)]
    cell = AttentiveChildSumTreeLSTM(4, 4)
    batch = collate_dependency(heads)
    x = torch.randn(batch.num_nodes, 4, requires_grad=True)
    with _CountProducts() as forward:
        h, _ = cell(x, batch)
    with _CountProducts() as backward:
        h.index_select(0, batch.roots).sum().backward()
    levels = batch.num_levels
    assert forward.products == levels + 2 * (levels - 1) and levels < batch.num_nodes / 10
    assert backward.products == 2 * (levels - 1) + 2 * levels + 2  # per level dx, [dW; dW_q]; [dW_p; dU_f], dU_iou

    trees = [random_binary(int(n), rng) for n in rng.integers(1, 30, size=64)]
    bcell = BinaryTreeLSTM(4, 4)
    bbatch = collate_binary(trees)
    bx = torch.randn(bbatch.num_leaves, 4, requires_grad=True)
    with _CountProducts() as forward:
        h, _ = bcell(bx, bbatch)
    with _CountProducts() as backward:
        h.index_select(0, bbatch.roots).sum().backward()
    assert forward.products == 1 + (bbatch.num_levels - 1)
    assert backward.products == (bbatch.num_levels - 1) + 3  # dx, dW (leaves), dU


def test_binary_leaf_is_tai_et_al_leaf() -> None:
    """A one-word tree and a two-word tree against the leaf written by hand from Tai et al.'s code
    (``c = W_c x + b_c``, ``h = sigmoid(W_o x + b_o) * tanh(c)``; no input gate), values and gradients."""
    torch.manual_seed(3)
    H, D = 3, 4
    cell = BinaryTreeLSTM(D, H)
    _randomise_biases(cell, 3)
    W_o, W_c = cell.W.weight[:H], cell.W.weight[H:]
    b_o, b_c = cell.W.bias[:H], cell.W.bias[H:]
    x = torch.randn(3, D, requires_grad=True)
    batch = collate_binary([(1, np.zeros(0, np.int64), np.zeros(0, np.int64)), (2, np.array([0]), np.array([1]))])
    h, c = cell(x, batch)
    c_leaf = x @ W_c.T + b_c
    h_leaf = torch.sigmoid(x @ W_o.T + b_o) * torch.tanh(c_leaf)
    leaves = batch.leaf_token
    assert torch.allclose(c[: batch.num_leaves], c_leaf[leaves], atol=1e-6)
    assert torch.allclose(h[: batch.num_leaves], h_leaf[leaves], atol=1e-6)
    z = cell.U.weight @ torch.cat([h_leaf[1], h_leaf[2]])  # the two-word tree's root
    i, o, u = torch.sigmoid(z[:H] + cell.b_iou[:H]), torch.sigmoid(z[H : 2 * H] + cell.b_iou[H : 2 * H]), torch.tanh(
        z[2 * H : 3 * H] + cell.b_iou[2 * H :]
    )
    f_l, f_r = torch.sigmoid(z[3 * H : 4 * H] + cell.b_f), torch.sigmoid(z[4 * H :] + cell.b_f)
    c_root = i * u + f_l * c_leaf[1] + f_r * c_leaf[2]
    h_root = o * torch.tanh(c_root)
    roots = h.index_select(0, batch.roots)
    assert torch.allclose(roots[1], h_root, atol=1e-6) and torch.allclose(roots[0], h_leaf[0], atol=1e-6)
    weights = torch.randn(2, H)
    grads = torch.autograd.grad((roots * weights).sum(), [x, *cell.parameters()])
    hand = torch.autograd.grad((torch.stack([h_leaf[0], h_root]) * weights).sum(), [x, *cell.parameters()],
                               allow_unused=True)
    for a, b in zip(grads, hand, strict=True):
        assert torch.allclose(a, b if b is not None else torch.zeros_like(a), atol=1e-6)


def test_levels_are_heights_and_edges_listed_per_parent_level() -> None:
    """Level of a node = its height (leaves 0): max height + 1 steps; within a level, nodes are sorted by
    their parent's level (roots last); the children of each level are listed once, by node id."""
    heads = [np.array([1, -1, 1, 2]), np.array([-1])]  # 0<-1->2->3 (heights 0,2,1,0); a one-word tree
    batch = collate_dependency(heads)
    assert batch.plan.level_sizes == (3, 1, 1) and batch.num_levels == 3
    assert batch.node_token.tolist() == [3, 0, 4, 2, 1]
    assert batch.plan.edge_offsets == (0, 0, 1, 3)  # level 1 (token 2) has one child, level 2 (token 1) two
    assert batch.plan.edge_child.tolist() == [0, 1, 3] and batch.plan.edge_parent.tolist() == [0, 0, 0]
    assert batch.node_token[batch.roots].tolist() == [1, 4]
    tree = (3, np.array([0, 3]), np.array([1, 2]))  # ((0 1) 2)
    b = collate_binary([tree, (1, np.array([], np.int64), np.array([], np.int64))])
    assert b.num_leaves == 4 and b.plan.level_sizes == (4, 1, 1) and b.roots.tolist() == [5, 3]
    assert b.leaf_token.tolist() == [0, 1, 2, 3]
    assert b.children.tolist() == [[0, 1], [4, 2]]  # (0 1) is node 4, the root (4 2)


def test_segment_softmax_matches_per_segment_softmax() -> None:
    scores = torch.tensor([0.3, -1.0, 2.0, 0.5, 0.5, 7.0])
    segment = torch.tensor([0, 0, 1, 1, 1, 2])
    out = segment_softmax(scores, segment, 3)
    expected = torch.cat([scores[:2].softmax(0), scores[2:5].softmax(0), scores[5:].softmax(0)])
    assert torch.allclose(out, expected)
