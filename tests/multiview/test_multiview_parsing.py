"""Parsing: spaCy dependencies, the derived constituency backend, binarisation, caches, bracket F1."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.data import Document
from sentsweep.data.parsing import (
    EMPTY_TOKEN,
    ParsedSentence,
    Parser,
    binarize,
    binary_levels,
    corpus_hash,
    corpus_stats,
    dependency_levels,
    dependency_spans,
    evaluate_on_treebank,
    laminar,
    make_backend,
    parse_corpus,
)
from sentsweep.data.treebank import bracket_f1, branching_spans, gold_for_scoring, read_bracketed
from sentsweep.errors import ConfigError, DataError


# -- binarisation and derivation (pure) ------------------------------------------------------------
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


# -- treebank reading and F1 -------------------------------------------------------------------------
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


# -- spaCy parsing -----------------------------------------------------------------------------------
def test_parse_real_sentences(parser: Parser) -> None:
    parsed = parser.parse(["The cat sat on the mat.", "It rains. It pours", "   "])
    cat, two, empty = parsed
    assert cat.tokens == ("The", "cat", "sat", "on", "the", "mat", ".")
    assert cat.heads.count(-1) == 1 and cat.heads[cat.tokens.index("sat")] == -1
    assert (0, 7) in cat.spans and (0, 2) in cat.spans
    assert two.heads.count(-1) == 1  # the second sentence's root hangs on the first's
    assert empty.tokens == (EMPTY_TOKEN,) and empty.heads == (-1,)
    assert "derived" in parser.backend_id and "v" in parser.backend_id


def test_tokens_only_mode_tokenizes_the_same(parser: Parser, parse_cache: Path) -> None:
    tokens_only = Parser("derived", cache=parse_cache, trees=False)
    text = "A  black bird, which is black, sits."
    assert tokens_only.parse([text])[0].tokens == parser.parse([text])[0].tokens
    assert not tokens_only.parse([text])[0].has_trees


def test_sentence_cache_survives_a_new_parser(parser: Parser, parse_cache: Path, monkeypatch) -> None:
    text = "Cached sentences are read back without spaCy."
    first = parser.parse([text])[0]
    fresh = Parser("derived", cache=parse_cache)

    def fail(*args, **kwargs):
        raise AssertionError("parsed again instead of reading the cache")

    monkeypatch.setattr(fresh, "_parse_texts", fail)
    assert fresh.parse([text])[0] == first


def test_parse_corpus_is_cached_by_hash(parser: Parser) -> None:
    docs = [Document("a", ("One sentence here.", "Another one follows.")), Document("b", ("Short.",))]
    first = parse_corpus(docs, parser)
    second = parse_corpus(docs, parser)
    assert not first.from_cache and second.from_cache and first.path == second.path
    assert corpus_hash(docs) != corpus_hash(docs[:1])
    assert second.documents == first.documents and second.backend_id == parser.backend_id
    stats = corpus_stats(second)
    assert stats["documents"] == 2 and stats["sentences"] == 3 and stats["dep_levels_max"] >= 2


def test_parsed_sentence_json_roundtrip() -> None:
    p = ParsedSentence(("a", "b", "c"), (1, -1, 1), ((0, 3), (0, 2)))
    assert ParsedSentence.from_json(p.to_json()) == p


def test_backends() -> None:
    assert make_backend("derived").name == "derived"
    assert make_backend("auto").name in ("derived", "stanza") or make_backend("auto").name.startswith(
        "benepar"
    )
    with pytest.raises(ConfigError, match="unknown constituency backend"):
        Parser("cky")
    for real in ("benepar", "stanza"):
        try:
            make_backend(real)
        except ConfigError as exc:
            assert real in str(exc)  # not installed / no model offline: a clear message


def test_derived_backend_against_gold_treebank(shared_data: Path, parser: Parser) -> None:
    scores = evaluate_on_treebank(shared_data / "treebank" / "combined", parser, limit=60)
    assert scores["sentences"] == 60  # the first 60 gold trees (none is empty)
    assert scores["f1"] > scores["f1_right_branching"] + 10
    assert 40 < scores["f1"] < 95
