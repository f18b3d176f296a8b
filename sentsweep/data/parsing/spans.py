"""Span geometry of parsed sentences: the parsed sentence, laminar spans, binarisation, tree heights.

A sentence's constituency is a set of unlabelled spans ``(start, end)`` (end exclusive, >= 2 tokens);
:func:`laminar` keeps a non-crossing subset, :func:`binarize` turns it into the binary tree the binary
Tree-LSTM reads (left markovisation, unary chains collapsed), :func:`dependency_spans` derives spans
from a dependency tree. Pure Python: no spaCy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: Bump when the tree format or a derivation changes: cached parses of other versions are not reused.
PARSING_VERSION = 1
#: Stands in for a sentence with no token at all, so that every sentence has a root.
EMPTY_TOKEN = "<empty>"

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ParsedSentence:
    """One sentence: ``tokens``, dependency ``heads`` (index of each token's head, -1 for the root) and
    unlabelled constituency ``spans`` ``(start, end)`` (end exclusive, >= 2 tokens, laminar).

    ``heads`` and ``spans`` are empty when the parser ran in tokens-only mode (``trees=False``).
    """

    tokens: tuple[str, ...]
    heads: tuple[int, ...] = ()
    spans: tuple[Span, ...] = ()

    @property
    def has_trees(self) -> bool:
        return len(self.heads) == len(self.tokens)

    def binarized(self) -> BinaryTree:
        """The constituency tree binarised for the binary Tree-LSTM (:func:`binarize`)."""
        return binarize(self.spans, len(self.tokens))

    def to_json(self) -> list[Any]:
        return [list(self.tokens), list(self.heads), [x for s in self.spans for x in s]]

    @classmethod
    def from_json(cls, row: Sequence[Any]) -> ParsedSentence:
        tokens, heads, flat = row
        return cls(tuple(tokens), tuple(heads), tuple(zip(flat[::2], flat[1::2], strict=True)))


@dataclass(frozen=True, slots=True)
class BinaryTree:
    """A binarised constituency tree over ``n`` leaves (the tokens, ids ``0..n-1``).

    Internal nodes have ids ``n..2n-2`` in post-order (children before parents): internal node ``n + i``
    has children ``left[i]`` and ``right[i]``; the root is the last internal node, or leaf 0 when n = 1.
    """

    n: int
    left: tuple[int, ...]
    right: tuple[int, ...]

    @property
    def root(self) -> int:
        return self.n + len(self.left) - 1 if self.left else 0

    def spans(self) -> set[Span]:
        """The spans of the internal nodes (for measuring the binarised tree)."""
        extent: list[Span] = [(i, i + 1) for i in range(self.n)]
        for a, b in zip(self.left, self.right, strict=True):
            extent.append((extent[a][0], extent[b][1]))
        return set(extent[self.n :])


def laminar(spans: Iterable[Span], n: int) -> list[Span]:
    """Valid, non-crossing spans over >= 2 of ``n`` tokens plus ``(0, n)``, outermost first.

    A span that crosses one kept before it (a non-projective dependency subtree) is dropped.
    """
    candidates = {(max(0, s), min(n, e)) for s, e in spans}
    candidates = {(s, e) for s, e in candidates if e - s >= 2}
    if n >= 2:
        candidates.add((0, n))
    kept: list[Span] = []
    for s, e in sorted(candidates, key=lambda x: (x[0], -x[1])):
        if all(e <= ks or s >= ke or (ks <= s and e <= ke) for ks, ke in kept):
            kept.append((s, e))
    return kept


def binarize(spans: Iterable[Span], n: int) -> BinaryTree:
    """Left-markovised binarisation of the tree with constituents ``spans`` over ``n`` leaves.

    A constituent with children ``c1 .. ck`` (its maximal sub-constituents and uncovered tokens, in order)
    becomes ``((c1 c2) c3) ... ck``; unary chains (a constituent with one child, repeated spans) collapse
    into one node because constituents are identified by their spans.
    """
    if n < 1:
        raise ValueError("a tree needs at least one leaf")
    ordered = laminar(spans, n)
    children: dict[Span, list[Span]] = {span: [] for span in ordered}
    stack: list[Span] = []
    for span in ordered:  # outermost first: the parent is the innermost open span containing it
        while stack and not (stack[-1][0] <= span[0] and span[1] <= stack[-1][1]):
            stack.pop()
        if stack:
            children[stack[-1]].append(span)
        stack.append(span)
    left: list[int] = []
    right: list[int] = []

    def build(span: Span) -> int:
        parts: list[int] = []
        pos = span[0]
        for child in children[span]:
            parts.extend(range(pos, child[0]))
            parts.append(build(child))
            pos = child[1]
        parts.extend(range(pos, span[1]))
        node = parts[0]
        for other in parts[1:]:
            left.append(node)
            right.append(other)
            node = n + len(left) - 1
        return node

    if n >= 2:
        build((0, n))
    return BinaryTree(n, tuple(left), tuple(right))


def dependency_spans(heads: Sequence[int], variant: str = "flat") -> list[Span]:
    """Constituents derived from a dependency tree: each head with its dependents forms a phrase.

    ``flat``: one phrase per head, its whole subtree. ``xbar``: also, for a head with dependents on both
    sides, the head with its right dependents (``[subject [verb object]]``).
    """
    n = len(heads)
    lo, hi = list(range(n)), [i + 1 for i in range(n)]
    kids: list[list[int]] = [[] for _ in range(n)]
    for child, head in enumerate(heads):
        if head >= 0:
            kids[head].append(child)
    order: list[int] = []
    stack = [i for i, h in enumerate(heads) if h < 0]
    while stack:  # pre-order; reversed, every node comes after its dependents
        node = stack.pop()
        order.append(node)
        stack.extend(kids[node])
    for node in reversed(order):
        for child in kids[node]:
            lo[node], hi[node] = min(lo[node], lo[child]), max(hi[node], hi[child])
    spans = [(lo[i], hi[i]) for i in range(n) if kids[i]]
    if variant == "xbar":
        for i in range(n):
            right = [c for c in kids[i] if c > i]
            if right and any(c < i for c in kids[i]):
                spans.append((i, max(hi[c] for c in right)))
    elif variant != "flat":
        raise ValueError(f"unknown derivation {variant!r}; use 'flat' or 'xbar'")
    return spans


def dependency_levels(heads: Sequence[int]) -> list[int]:
    """Height of every token in its dependency tree (0 for a token without dependents)."""
    n = len(heads)
    kids: list[list[int]] = [[] for _ in range(n)]
    for child, head in enumerate(heads):
        if head >= 0:
            kids[head].append(child)
    order, stack = [], [i for i, h in enumerate(heads) if h < 0]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(kids[node])
    level = [0] * n
    for node in reversed(order):
        if kids[node]:
            level[node] = 1 + max(level[c] for c in kids[node])
    return level


def binary_levels(tree: BinaryTree) -> list[int]:
    """Height of every node of a binary tree (leaves 0), indexed by node id."""
    level = [0] * (tree.n + len(tree.left))
    for i, (a, b) in enumerate(zip(tree.left, tree.right, strict=True)):
        level[tree.n + i] = 1 + max(level[a], level[b])
    return level

