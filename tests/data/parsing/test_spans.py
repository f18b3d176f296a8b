"""Span geometry of parsed sentences: binarisation, laminar spans, dependency-derived spans (no spaCy)."""

from __future__ import annotations

from sentsweep.data.parsing import (
    ParsedSentence,
    binarize,
    binary_levels,
    dependency_levels,
    dependency_spans,
    laminar,
)


def test_binarize_is_left_markovised() -> None:
    tree = binarize([(0, 4)], 4)  # a flat constituent: ((((0 1) 2) 3)
    assert tree.left == (0, 4, 5) and tree.right == (1, 2, 3)
    assert tree.root == 6
    assert tree.spans() == {(0, 2), (0, 3), (0, 4)}


def test_binarize_keeps_constituents_and_collapses_unaries() -> None:
    spans = [(0, 5), (0, 2), (2, 5), (2, 5), (3, 5)]  # (2,5) twice: a unary chain
    tree = binarize(spans, 5)
    assert len(tree.left) == 4  # n - 1 internal nodes: exactly binary
    assert {(0, 2), (2, 5), (3, 5), (0, 5)} <= tree.spans()
    assert binary_levels(tree)[tree.root] == 3


def test_binarize_one_word_and_crossing_spans() -> None:
    assert binarize([], 1).root == 0 and binarize([], 1).left == ()
    assert laminar([(0, 2), (1, 3), (2, 2)], 3) == [(0, 3), (0, 2)]  # (1,3) crosses (0,2), (2,2) empty


def test_dependency_spans_flat_and_xbar() -> None:
    # The(0) cat(1) sat(2) on(3) the(4) mat(5): det, nsubj, ROOT, prep, det, pobj
    heads = [1, 2, -1, 2, 5, 3]
    assert sorted(dependency_spans(heads)) == [(0, 2), (0, 6), (3, 6), (4, 6)]
    assert (2, 6) in dependency_spans(heads, "xbar")  # verb + right dependents
    assert dependency_levels(heads) == [0, 1, 3, 2, 0, 1]


def test_parsed_sentence_json_roundtrip() -> None:
    p = ParsedSentence(("a", "b", "c"), (1, -1, 1), ((0, 3), (0, 2)))
    assert ParsedSentence.from_json(p.to_json()) == p
