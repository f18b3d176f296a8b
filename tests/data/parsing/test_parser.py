"""Parsing with spaCy (the session ``parser`` of tests/conftest.py): the derived backend, the caches, bracket F1.

The spaCy-free parts: tests/data/parsing/test_spans.py, tests/data/test_treebank.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.data import Document
from sentsweep.data.parsing import (
    EMPTY_TOKEN,
    Parser,
    corpus_hash,
    corpus_stats,
    evaluate_on_treebank,
    make_backend,
    parse_corpus,
)
from sentsweep.errors import ConfigError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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


def test_a_corrupt_corpus_cache_is_parsed_again(parser: Parser) -> None:
    docs = [Document("c", ("A corrupt cache file is never trusted.",))]
    first = parse_corpus(docs, parser)
    assert first.path is not None
    first.path.write_bytes(b"\x1f\x8b half a gzip")
    again = parse_corpus(docs, parser)
    assert not again.from_cache and again.documents == first.documents
    assert parse_corpus(docs, parser).from_cache  # rewritten whole


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
