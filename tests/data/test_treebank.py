"""Bracketed trees: reading PTB, spans, evalb-style unlabelled bracket F1, PTB escapes."""

from __future__ import annotations

import pytest

from sentsweep.data.treebank import (
    bracket_f1,
    branching_spans,
    gold_for_scoring,
    ptb_escape,
    ptb_unescape,
    read_bracketed,
)
from sentsweep.errors import DataError

PTB = """( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (-NONE- *T*-1) (PP (IN on) (NP (DT the) (NN mat))))
  (. .)) )"""


def test_read_ptb_and_spans() -> None:
    (tree,) = read_bracketed(PTB)
    gold = gold_for_scoring(tree)
    assert gold is not None and gold.words() == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert gold.spans() == {(0, 7), (0, 2), (2, 6), (3, 6), (4, 6)}
    assert gold.spans(with_root=False) == {(0, 2), (2, 6), (3, 6), (4, 6)}


def test_bracket_f1_ignores_punctuation_and_labels() -> None:
    gold = [gold_for_scoring(read_bracketed(PTB)[0])]
    perfect = bracket_f1(gold, [{(0, 7), (0, 2), (2, 6), (3, 6), (4, 6)}])
    assert perfect.f1 == 100.0
    # (0,6) and (0,7) are the same bracket once the final '.' is deleted
    assert bracket_f1(gold, [{(0, 6), (0, 2), (2, 6), (3, 6), (4, 6)}]).f1 == 100.0
    partial = bracket_f1(gold, [{(0, 7), (0, 3)}])  # 1 of 2 predicted right, 1 of 5 gold found
    assert partial.precision == 50.0 and partial.recall == 20.0
    assert branching_spans(3, "right") == {(0, 3), (1, 3)}


def test_unbalanced_brackets_name_the_source() -> None:
    with pytest.raises(DataError, match="x.mrg"):
        read_bracketed("(S (NP a)", source="x.mrg")


def test_ptb_escapes_round_trip() -> None:
    assert [ptb_escape(w) for w in ("(", "]", "a(b", "cat")] == ["-LRB-", "-RSB-", "a-LRB-b", "cat"]
    assert [ptb_unescape(w) for w in ("-LRB-", "-RCB-", "``", "''", "cat")] == ["(", "}", '"', '"', "cat"]
