"""Batched tree tensors: every node of a batch of trees, grouped by height, for level-wise Tree-LSTMs.

A batch of B trees is flattened into one node array and renumbered so that the nodes of each height
(level 0 = leaves) are contiguous; a Tree-LSTM then takes one step per level for the whole batch:
about ``max height + 1`` steps for a batch of 400 sentences instead of thousands of per-node cell calls.
Collation is vectorised NumPy (no Python loop over nodes; loops run over levels only).

Within a level, nodes are further sorted by the level of their parent (roots last). The children of
the nodes of a level are listed once (``edge_child``, global node ids, increasing), so a Tree-LSTM pass
reads them from its ``(nodes, hidden)`` state buffers with one index operation per level and sums them
per parent with one ``index_add`` (Child-Sum) or reads them as ``[left; right]`` pairs (binary).

- :class:`DependencyBatch`: dependency trees (every node is a token; any number of children).
- :class:`BinaryBatch`: binarised constituency trees (leaves are the tokens; internal nodes have a
  left and a right child).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch
from torch import Tensor


def _levels(n: int, child: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Height of every node (0 for nodes without children) from child -> parent edges, vectorised:
    one relaxation per height, ``level[p] = max(level[c] + 1)``, until nothing changes."""
    level = np.zeros(n, dtype=np.int64)
    if child.size == 0:
        return level
    while True:
        new = np.zeros(n, dtype=np.int64)
        np.maximum.at(new, parent, level[child] + 1)
        if np.array_equal(new, level):
            return level
        level = new


@dataclass(frozen=True)
class LevelPlan:
    """How the nodes of a batch are processed level by level (shared by both batch kinds).

    ``level_sizes[s]``: nodes at level s (contiguous, in order). The children of the nodes of level
    ``s >= 1`` are the edges ``edge_offsets[s]:edge_offsets[s + 1]``, in increasing node id:
    ``edge_child`` holds the child's node id, ``edge_parent`` the position of its parent within level s.
    ``roots[b]``: the root node of tree b.
    """

    level_sizes: tuple[int, ...]
    edge_offsets: tuple[int, ...]
    edge_child: Tensor
    edge_parent: Tensor
    roots: Tensor

    @property
    def num_levels(self) -> int:
        return len(self.level_sizes)

    @property
    def num_nodes(self) -> int:
        return int(sum(self.level_sizes))

    def to(self, device: torch.device | str) -> LevelPlan:
        """A copy with its tensors on ``device``."""
        return replace(
            self,
            edge_child=self.edge_child.to(device),
            edge_parent=self.edge_parent.to(device),
            roots=self.roots.to(device),
        )


def _plan(parent: np.ndarray, roots: np.ndarray) -> tuple[LevelPlan, np.ndarray, np.ndarray]:
    """Plan for nodes with ``parent`` (old ids, -1 for roots); returns the plan, ``order`` (new -> old id)
    and ``new_id`` (old -> new id)."""
    n = parent.size
    child = np.nonzero(parent >= 0)[0]
    level = _levels(n, child, parent[child])
    num_levels = int(level.max()) + 1 if n else 0
    parent_level = np.full(n, num_levels, dtype=np.int64)  # roots after every real parent level
    parent_level[child] = level[parent[child]]
    order = np.lexsort((np.arange(n), parent_level, level))
    new_id = np.empty(n, dtype=np.int64)
    new_id[order] = np.arange(n)
    level_sizes = np.bincount(level, minlength=num_levels)
    level_start = np.concatenate([[0], np.cumsum(level_sizes)])
    # children of each parent level, in node order
    child_new = np.sort(new_id[child])
    child_old = order[child_new]
    p_level = parent_level[child_old]
    by_parent_level = np.argsort(p_level, kind="stable")
    child_old, p_level = child_old[by_parent_level], p_level[by_parent_level]
    edge_offsets = np.searchsorted(p_level, np.arange(num_levels + 1), side="left")
    edge_parent = new_id[parent[child_old]] - level_start[p_level]
    plan = LevelPlan(
        level_sizes=tuple(level_sizes.tolist()),
        edge_offsets=tuple(edge_offsets.tolist()),
        edge_child=torch.from_numpy(new_id[child_old]),
        edge_parent=torch.from_numpy(edge_parent),
        roots=torch.from_numpy(new_id[roots]),
    )
    return plan, order, new_id


class _Batch:
    """Shared by the tree batches: every one carries a :class:`LevelPlan` called ``plan``."""

    plan: LevelPlan

    @property
    def num_levels(self) -> int:
        return self.plan.num_levels

    @property
    def num_nodes(self) -> int:
        return self.plan.num_nodes

    @property
    def roots(self) -> Tensor:
        return self.plan.roots

    def to(self, device: torch.device | str):
        """A copy with every tensor on ``device`` (the plan's tensors included)."""
        values = {}
        for f in fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if isinstance(v, (Tensor, LevelPlan)):
                v = v.to(device)
            values[f.name] = v
        return type(self)(**values)


@dataclass(frozen=True)
class DependencyBatch(_Batch):
    """Dependency trees of a batch. ``node_token[i]``: the flat token (position in the batch's
    concatenated tokens) of node i, nodes in level order; ``plan``: see :class:`LevelPlan`."""

    node_token: Tensor
    plan: LevelPlan


def collate_dependency(heads: Sequence[np.ndarray]) -> DependencyBatch:
    """Batch dependency trees given as head arrays (``heads[b][i]``: head of token i, -1 for the root;
    exactly one root per sentence)."""
    lengths = np.fromiter((len(h) for h in heads), dtype=np.int64, count=len(heads))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.concatenate([np.asarray(h, dtype=np.int64) for h in heads]) if heads else np.zeros(0, np.int64)
    is_root = flat < 0
    if int(is_root.sum()) != len(heads):
        raise ValueError("every dependency tree needs exactly one root (head -1)")
    parent = np.where(is_root, -1, flat + np.repeat(offsets[:-1], lengths))
    plan, order, _ = _plan(parent, np.nonzero(is_root)[0])
    return DependencyBatch(node_token=torch.from_numpy(order), plan=plan)


@dataclass(frozen=True)
class BinaryBatch(_Batch):
    """Binary trees of a batch: the first ``num_leaves`` nodes are the leaves (level 0; ``leaf_token``
    gives each one's flat token), then the internal nodes by level. ``children[k]``: the node ids of the
    left and the right child of internal node ``num_leaves + k``, ``(internal nodes, 2)``."""

    leaf_token: Tensor
    children: Tensor
    num_leaves: int
    plan: LevelPlan


def collate_binary(trees: Sequence[tuple[int, np.ndarray, np.ndarray]]) -> BinaryBatch:
    """Batch binary trees given as ``(n, left, right)``: leaves ``0..n-1``, internal node ``n + k`` with
    children ``left[k]``, ``right[k]`` (post-order, root last; no internal node when n = 1)."""
    n_leaves = np.fromiter((t[0] for t in trees), dtype=np.int64, count=len(trees))
    if (n_leaves < 1).any():
        raise ValueError("every tree needs at least one leaf")
    n_internal = n_leaves - 1
    leaf_off = np.concatenate([[0], np.cumsum(n_leaves)])
    total_leaves = int(leaf_off[-1])
    int_off = total_leaves + np.concatenate([[0], np.cumsum(n_internal)])
    total = int(int_off[-1])
    tree_of = np.repeat(np.arange(len(trees)), n_internal)

    def globalise(local: np.ndarray) -> np.ndarray:
        n_b = n_leaves[tree_of]
        return np.where(local < n_b, leaf_off[tree_of] + local, int_off[tree_of] + local - n_b)

    empty = np.zeros(0, dtype=np.int64)
    left = globalise(np.concatenate([np.asarray(t[1], dtype=np.int64) for t in trees] or [empty]))
    right = globalise(np.concatenate([np.asarray(t[2], dtype=np.int64) for t in trees] or [empty]))
    internal = np.arange(total_leaves, total)
    parent = np.full(total, -1, dtype=np.int64)
    parent[left], parent[right] = internal, internal
    roots = np.where(n_leaves == 1, leaf_off[:-1], int_off[1:] - 1)
    plan, order, new_id = _plan(parent, roots)
    internal_new = order[total_leaves:]  # old ids of the internal nodes, in new order
    k = internal_new - total_leaves
    return BinaryBatch(
        leaf_token=torch.from_numpy(order[:total_leaves]),
        children=torch.from_numpy(np.stack([new_id[left[k]], new_id[right[k]]], axis=1)),
        num_leaves=total_leaves,
        plan=plan,
    )
