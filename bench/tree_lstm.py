"""Batched Tree-LSTMs (one step per tree level for the whole batch) against per-node recursion and the
arithmetic limit of the machine.

A batch of parsed sentences (default 400 from the Wikipedia corpus, spaCy dependencies and the derived
constituency backend) goes through the ``dep`` cell (attentive Child-Sum Tree-LSTM, eqs. 1-6) and the
``const`` cell (binary Tree-LSTM over the binarised trees), with the same weights, in the same run:

- batched: :class:`~sentsweep.methods.multiview.cells.AttentiveChildSumTreeLSTM` /
  :class:`~sentsweep.methods.multiview.cells.BinaryTreeLSTM` over the level-sorted batch;
- reference: the usual per-node recursion (one cell call per node, its children's states stacked, as in
  Tai et al.'s reference implementation), sentence after sentence;
- limit: the multiply-adds the cell needs for the batch (:func:`dep_work`, :func:`const_work`: every
  matrix product of the gates and the attention, plus the attention's dot products) run as dense matrix
  products of the same shapes with all rows at once (forward: ``X W``; forward + backward: also ``dY W^T``
  and ``X^T dY``, 3x the FLOPs), on the same threads. "% of limit" = achieved GFLOP/s / dense GFLOP/s;
  batched pass and dense products are timed alternately and the ratio is the median of the pairs.

Prints, per cell, hidden size, pass and thread count: seconds, GFLOP/s, % of limit, the ratio recursive /
batched (goal >= 20x), the ratio a pass at 100% of the limit would reach (recursive seconds / seconds of the
dense products: where it is below 20x no batched pass of the same FLOPs can reach the goal), the peak RSS
of the batched pass, the number of batched steps (levels = max height + 1) and the largest difference between
the two root states (they must agree).

    python -m bench.tree_lstm [--sentences 400] [--hidden 150,300] [--threads 1,all] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from bench._measure import Peak
from bench.common import best_of, paired, print_table
from sentsweep.data import corpus
from sentsweep.data.parsing import Parser
from sentsweep.methods.multiview.cells import AttentiveChildSumTreeLSTM, BinaryTreeLSTM
from sentsweep.methods.multiview.model import xavier_init
from sentsweep.methods.multiview.trees import BinaryBatch, DependencyBatch, collate_binary, collate_dependency
from sentsweep.trainables.allocator import keep_freed_memory


def recursive_child_sum(cell: AttentiveChildSumTreeLSTM, x: Tensor, heads: np.ndarray) -> Tensor:
    """Root state of one dependency tree, one node at a time (children stacked per node)."""
    H = cell.hidden_size
    kids: list[list[int]] = [[] for _ in heads]
    for k, h in enumerate(heads):
        if h >= 0:
            kids[h].append(k)

    def node(j: int) -> tuple[Tensor, Tensor]:
        w_i, w_o, w_u, w_f = cell.W(x[j]).split(H)
        if kids[j]:
            states = [node(k) for k in kids[j]]
            h_k = torch.stack([s[0] for s in states])
            c_k = torch.stack([s[1] for s in states])
            q = cell.W_q(x[j])
            alpha = torch.softmax(torch.cosine_similarity(q.unsqueeze(0), cell.W_p(h_k), dim=-1), dim=0)
            h_tilde = (alpha.unsqueeze(-1) * h_k).sum(0)
            fc = (torch.sigmoid(w_f + cell.U_f(h_k)) * c_k).sum(0)
        else:
            h_tilde, fc = x.new_zeros(H), x.new_zeros(H)
        u_i, u_o, u_u = cell.U_iou(h_tilde).split(H)
        c = torch.sigmoid(w_i + u_i) * torch.tanh(w_u + u_u) + fc
        return torch.sigmoid(w_o + u_o) * torch.tanh(c), c

    return node(int(np.nonzero(heads < 0)[0][0]))[0]


def recursive_binary(cell: BinaryTreeLSTM, x: Tensor, tree: tuple[int, np.ndarray, np.ndarray]) -> Tensor:
    """Root state of one binary tree, one node at a time."""
    H = cell.hidden_size
    n, left, right = tree

    def node(j: int) -> tuple[Tensor, Tensor]:
        if j < n:  # Tai et al.'s leaf: c = W_c x + b_c, h = o * tanh(c)
            o, c = cell.W(x[j]).split(H)
            return torch.sigmoid(o) * torch.tanh(c), c
        (h_l, c_l), (h_r, c_r) = node(int(left[j - n])), node(int(right[j - n]))
        z = cell.U(torch.cat([h_l, h_r]))
        i, o, u = (z[: 3 * H] + cell.b_iou).split(H)
        f_l, f_r = (z[3 * H :] + cell.b_f.repeat(2)).split(H)
        c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(f_l) * c_l + torch.sigmoid(f_r) * c_r
        return torch.sigmoid(o) * torch.tanh(c), c

    return node(n + len(left) - 1 if len(left) else 0)[0]


@dataclass(frozen=True)
class Work:
    """Multiply-adds of one forward pass: ``shapes`` (rows, in, out) of its matrix products plus ``extra`` MACs
    of vector work (the attention's dot products and weighted sums)."""

    shapes: tuple[tuple[int, int, int], ...]
    extra: int = 0

    def flops(self, backward: bool) -> float:
        """FLOPs of the forward pass (2 per multiply-add), 3x that with the backward pass."""
        macs = sum(m * k * n for m, k, n in self.shapes) + self.extra
        return 2.0 * macs * (3 if backward else 1)


def dep_work(batch: DependencyBatch, input_size: int, hidden: int) -> Work:
    """Attentive Child-Sum cell: ``W_i, W_o, W_u`` on every node's input (3H outputs), ``W_f`` and ``W_q`` on
    the input of every node with children (2H: a leaf has no forget gate and attends to nothing, so the batched
    pass skips them; the recursion below takes a leaf's ``W_f x`` in its one product ``W x`` and ``U_iou`` of its
    zero ``h~``, work not counted here), ``W_p`` and ``U_f`` on every child (2H), ``U_iou`` on every
    node with children (3H); per child the cosine (q.p, |p|^2) and the weighted sum alpha h, per parent |q|^2
    (eqs. 2-6)."""
    nodes, edges = batch.num_nodes, batch.plan.edge_offsets[-1]
    parents = nodes - batch.plan.level_sizes[0]
    shapes = ((nodes, input_size, 3 * hidden), (parents, input_size, 2 * hidden), (edges, hidden, 2 * hidden),
              (parents, hidden, 3 * hidden))
    return Work(shapes, extra=3 * edges * hidden + parents * hidden)


def const_work(batch: BinaryBatch, input_size: int, hidden: int) -> Work:
    """Binary cell: ``W`` on every leaf (``[o; c]``, 2H outputs), ``U`` on every internal node's ``[h_L; h_R]``
    (5H)."""
    internal = batch.num_nodes - batch.num_leaves
    return Work(((batch.num_leaves, input_size, 2 * hidden), (internal, 2 * hidden, 5 * hidden)))


def ceiling_ratio(recursive_seconds: float, batched_seconds: float, share_of_limit: float) -> float:
    """The ratio recursive / batched that a pass at 100% of the limit would reach: such a pass takes
    ``batched_seconds * share_of_limit`` (the batched pass runs at ``share_of_limit`` of the dense products'
    GFLOP/s on the same FLOPs)."""
    return recursive_seconds / (batched_seconds * share_of_limit)


def dense(work: Work, backward: bool) -> Callable[[], None]:
    """The work's matrix products as dense products with all rows at once (the practical limit)."""
    operands = [(torch.randn(m, k), torch.randn(k, n), torch.randn(m, n)) for m, k, n in work.shapes]

    def step() -> None:
        for x, w, dy in operands:
            x @ w
            if backward:
                dy @ w.T
                x.T @ dy

    return step


def run(parsed: list, hidden: int, input_size: int, repeats: int, recursion: bool) -> list[list]:
    """Rows of the table for one hidden size at the current thread count (the reference is timed once, after
    its own check run)."""
    heads = [np.asarray(p.heads, dtype=np.int64) for p in parsed]
    trees = [
        (t.n, np.asarray(t.left, np.int64), np.asarray(t.right, np.int64))
        for t in (p.binarized() for p in parsed)
    ]
    lengths = [len(p.tokens) for p in parsed]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
    tokens = torch.randn(sum(lengths), input_size, requires_grad=True)  # word vectors are trained too
    dep_cell, const_cell = AttentiveChildSumTreeLSTM(input_size, hidden), BinaryTreeLSTM(input_size, hidden)
    xavier_init(dep_cell)
    xavier_init(const_cell)
    dep_batch, const_batch = collate_dependency(heads), collate_binary(trees)

    def dep_batched() -> Tensor:
        h, _ = dep_cell(tokens.index_select(0, dep_batch.node_token), dep_batch)
        return h.index_select(0, dep_batch.roots)

    def dep_recursive() -> Tensor:
        return torch.stack(
            [
                recursive_child_sum(dep_cell, tokens[s : s + n], hd)
                for s, n, hd in zip(starts, lengths, heads, strict=True)
            ]
        )

    def const_batched() -> Tensor:
        h, _ = const_cell(tokens, const_batch)
        return h.index_select(0, const_batch.roots)

    def const_recursive() -> Tensor:
        return torch.stack(
            [
                recursive_binary(const_cell, tokens[s : s + n], t)
                for s, n, t in zip(starts, lengths, trees, strict=True)
            ]
        )

    def with_backward(fn: Callable[[], Tensor]) -> Callable[[], None]:
        def step() -> None:
            fn().sum().backward()

        return step

    rows = []
    cases = [
        ("dep (attentive Child-Sum)", dep_batched, dep_recursive, dep_batch,
         dep_work(dep_batch, input_size, hidden)),
        ("const (binary N-ary)", const_batched, const_recursive, const_batch,
         const_work(const_batch, input_size, hidden)),
    ]
    for name, batched, recursive, batch, work in cases:
        with torch.no_grad():
            diff = f"{float((batched() - recursive()).abs().max()):.1e}" if recursion else "-"
        for label, backward in (("forward", False), ("forward+backward", True)):
            step = with_backward(batched) if backward else batched
            with torch.set_grad_enabled(backward), Peak() as peak:
                seconds, dense_seconds, dense_over_batched = paired(step, dense(work, backward), repeats)
            matmul_flops = Work(work.shapes).flops(backward)
            limit = dense_over_batched * work.flops(backward) / matmul_flops
            ratio = ceiling = "-"
            if recursion:
                with torch.set_grad_enabled(backward):
                    reference = best_of(with_backward(recursive) if backward else recursive, 1, warmup=0)
                ratio = f"{reference / seconds:.1f}x"
                ceiling = f"{ceiling_ratio(reference, seconds, limit):.1f}x"
            rows.append(
                [name, hidden, label, torch.get_num_threads(), batch.num_nodes, batch.num_levels, seconds,
                 f"{work.flops(backward) / seconds / 1e9:.1f}", f"{matmul_flops / dense_seconds / 1e9:.1f}",
                 f"{100 * limit:.0f}%", ratio, ceiling, f"{peak.rss_mib:,.0f}", diff]
            )
    return rows


def thread_counts(value: str) -> list[int]:
    """``"1,all"`` -> ``[1, cpu count]`` (duplicates dropped)."""
    counts = [os.cpu_count() or 1 if v.strip() == "all" else int(v) for v in value.split(",")]
    return list(dict.fromkeys(counts))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=400)
    ap.add_argument("--hidden", default="150,300", help="comma-separated hidden sizes")
    ap.add_argument("--input", type=int, default=50, help="word-vector size (GloVe 6B: 50)")
    ap.add_argument("--corpus", default="enwiki")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of the batched cells (median)")
    ap.add_argument("--threads", default="1,all", help="torch CPU thread counts, comma-separated ('all': every core)")
    ap.add_argument("--no-recursion", dest="recursion", action="store_false", help="skip the per-node reference")
    args = ap.parse_args(argv)
    keep_freed_memory()  # as in a training process (every pass here: batched, recursion, dense products)
    torch.manual_seed(0)
    sentences = [s for doc in corpus(args.corpus, data_dir=args.data_dir) for s in doc.sentences]
    parsed = Parser("derived").parse(sentences[: args.sentences])
    lengths = [len(p.tokens) for p in parsed]
    rows = []
    for threads in thread_counts(args.threads):
        torch.set_num_threads(threads)
        for hidden in args.hidden.split(","):
            rows += run(parsed, int(hidden), args.input, args.repeats, args.recursion)
    print(
        f"{len(parsed)} sentences of '{args.corpus}', {sum(lengths)} tokens (mean {np.mean(lengths):.1f}, "
        f"max {max(lengths)}), word dim {args.input}"
    )
    print_table(
        "Tree-LSTM: batched by level vs the dense-matmul limit and per-node recursion (seconds of the batched "
        "pass; % of limit = GFLOP/s / dense GFLOP/s of the same products; ratio = recursive / batched; ceiling = "
        "the ratio at 100% of the limit, recursive seconds / dense seconds of the same FLOPs; "
        "steps = levels = max height + 1)",
        ["cell", "hidden", "pass", "threads", "nodes", "steps", "batched s", "GFLOP/s", "dense GFLOP/s",
         "% of limit", "vs recursion", "ceiling at 100%", "peak RSS MiB", "max |diff| roots"],
        rows,
    )


if __name__ == "__main__":
    main()
