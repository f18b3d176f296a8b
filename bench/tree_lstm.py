"""Batched Tree-LSTMs (one step per tree level for the whole batch) against per-node recursion.

A batch of parsed sentences (default 400 from the Wikipedia corpus, spaCy dependencies and the derived
constituency backend) goes through the ``dep`` cell (attentive Child-Sum Tree-LSTM, eqs. 1-6) and the
``const`` cell (binary Tree-LSTM over the binarised trees), with the same weights, in the same run:

- batched: :class:`~sentsweep.methods.multiview.cells.AttentiveChildSumTreeLSTM` /
  :class:`~sentsweep.methods.multiview.cells.BinaryTreeLSTM` over the level-sorted batch;
- reference: the usual per-node recursion (one cell call per node, its children's states stacked, as in
  Tai et al.'s reference implementation), sentence after sentence.

Prints seconds for the forward pass and for forward + backward, the ratio reference / batched (goal
>= 20x), the number of batched steps (levels = max height + 1, leaves at height 0) and the largest
difference between the two root states (they must agree).

    python -m bench.tree_lstm [--sentences 400] [--hidden 300] [--corpus enwiki] [--repeats 3]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from torch import Tensor

from bench.common import best_of, print_table
from sentsweep.data import corpus
from sentsweep.data.parsing import Parser
from sentsweep.methods.multiview.cells import AttentiveChildSumTreeLSTM, BinaryTreeLSTM
from sentsweep.methods.multiview.model import xavier_init
from sentsweep.methods.multiview.trees import collate_binary, collate_dependency


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
        if j < n:
            i, o, u = (cell.W(x[j]) + cell.b_iou).split(H)
            c = torch.sigmoid(i) * torch.tanh(u)
            return torch.sigmoid(o) * torch.tanh(c), c
        (h_l, c_l), (h_r, c_r) = node(int(left[j - n])), node(int(right[j - n]))
        z = cell.U(torch.cat([h_l, h_r]))
        i, o, u = (z[: 3 * H] + cell.b_iou).split(H)
        f_l, f_r = (z[3 * H :] + cell.b_f.repeat(2)).split(H)
        c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(f_l) * c_l + torch.sigmoid(f_r) * c_r
        return torch.sigmoid(o) * torch.tanh(c), c

    return node(n + len(left) - 1 if len(left) else 0)[0]


def run(parsed: list, hidden: int, input_size: int, repeats: int) -> list[list]:
    """Rows of the table for one hidden size (the reference is timed once, after its own check run)."""
    heads = [np.asarray(p.heads, dtype=np.int64) for p in parsed]
    trees = [
        (t.n, np.asarray(t.left, np.int64), np.asarray(t.right, np.int64))
        for t in (p.binarized() for p in parsed)
    ]
    lengths = [len(p.tokens) for p in parsed]
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist()
    tokens = torch.randn(sum(lengths), input_size)
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

    def with_backward(fn):
        def step() -> None:
            fn().sum().backward()

        return step

    rows = []
    cases = [
        ("dep (attentive Child-Sum)", dep_batched, dep_recursive, dep_batch),
        ("const (binary N-ary)", const_batched, const_recursive, const_batch),
    ]
    for name, batched, recursive, batch in cases:
        with torch.no_grad():
            diff = float((batched() - recursive()).abs().max())
            fwd_b = best_of(batched, repeats)
            fwd_r = best_of(recursive, 1, warmup=0)
        bwd_b = best_of(with_backward(batched), repeats)
        bwd_r = best_of(with_backward(recursive), 1, warmup=0)
        for label, b, r in (("forward", fwd_b, fwd_r), ("forward+backward", bwd_b, bwd_r)):
            rows.append(
                [name, hidden, label, batch.num_nodes, batch.num_levels, b, r, f"{r / b:.1f}x", f"{diff:.1e}"]
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=400)
    ap.add_argument("--hidden", default="150,300", help="comma-separated hidden sizes")
    ap.add_argument("--input", type=int, default=50, help="word-vector size (GloVe 6B: 50)")
    ap.add_argument("--corpus", default="enwiki")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of the batched cells (median)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads, the same for both (default 1)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sentences = [s for doc in corpus(args.corpus, data_dir=args.data_dir) for s in doc.sentences]
    parsed = Parser("derived").parse(sentences[: args.sentences])
    lengths = [len(p.tokens) for p in parsed]
    rows = [
        row for hidden in args.hidden.split(",") for row in run(parsed, int(hidden), args.input, args.repeats)
    ]
    print(
        f"{len(parsed)} sentences of '{args.corpus}', {sum(lengths)} tokens (mean {np.mean(lengths):.1f}, "
        f"max {max(lengths)}), word dim {args.input}, torch threads {torch.get_num_threads()}"
    )
    print_table(
        "Tree-LSTM: batched by level vs per-node recursion (seconds; ratio = recursive / batched; "
        "steps = levels = max height + 1)",
        ["cell", "hidden", "pass", "nodes", "steps", "batched s", "recursive s", "ratio", "max |diff| roots"],
        rows,
    )


if __name__ == "__main__":
    main()
