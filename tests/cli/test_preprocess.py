"""``sentsweep negate``, ``parse`` and ``neighbours`` on the bundled sample (real spaCy, real models)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentsweep.cli import main

pytest.importorskip("spacy")


def test_negate_writes_pairs_and_fills_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nShe can swim.\nHe is not happy.\n")
    out = tmp_path / "pairs.tsv"
    assert main(["negate", str(corpus), "--out", str(out)]) == 0
    first = capsys.readouterr().out
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows == [["The cat sat on the mat.", "The cat did not sit on the mat."],
                    ["She can swim.", "She can not swim."],
                    ["He is not happy.", "He is happy."]]
    assert "parsed in" in first and "total" in first
    assert main(["negate", str(corpus)]) == 0  # the second time is a cache hit, printed as such
    second = capsys.readouterr().out
    assert "cache hit" in second and "-> The cat did not sit on the mat." in second


def test_parse_reports_tree_statistics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The old man saw a dog in the park.\nIt rained.\n")
    out = tmp_path / "stats.json"
    assert main(["parse", str(corpus), "--no-cache", "--out", str(out)]) == 0
    stats = json.loads(out.read_text())
    assert stats["sentences"] == 2 and stats["tokens"] == 13
    assert stats["dep_levels_max"] >= 3 and stats["const_levels_max"] >= 3


def test_parse_with_max_sentences_fills_the_cache_a_trial_with_them_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A trial parses the first ``max_sentences`` of its corpus, and the parse cache is keyed by what it parses: the
    command cuts the corpus the same way, so the trial finds its parses there."""
    from types import SimpleNamespace

    from sentsweep.data.parsing import Parser, parse_corpus
    from sentsweep.trainables.multiview import load_corpus

    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("# One\nThe old man saw a dog.\nIt rained.\n# Two\nA cat slept.\n# Three\n")
    assert main(["parse", str(corpus), "--max-sentences", "2"]) == 0
    assert "parsed in" in capsys.readouterr().out
    trial = SimpleNamespace(corpus=str(corpus), data_dir=None, max_sentences=2)
    assert [len(d.sentences) for d in load_corpus(trial)] == [2]
    assert parse_corpus(load_corpus(trial), Parser("derived", None)).from_cache
    assert not parse_corpus(load_corpus(SimpleNamespace(**{**vars(trial), "max_sentences": 3})),
                            Parser("derived", None)).from_cache  # three sentences: another corpus, parsed anew


def test_parse_needs_exactly_one_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse"]) == 2
    err = capsys.readouterr().err
    assert "corpus" in err and "Traceback" not in err


def test_neighbours_finds_the_paraphrase(minilm_path: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    pool = tmp_path / "pool.txt"
    pool.write_text("A man is playing a guitar.\nThe stock market fell sharply today.\n"
                    "Someone plays an instrument.\nA cat sleeps on the sofa.\n")
    assert main(["neighbours", "minilm", "A person plays the guitar.", "--pool", str(pool), "-k", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "query: A person plays the guitar."
    assert lines[1].endswith("A man is playing a guitar.")


def test_negate_with_the_reference_rules_fills_its_own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat on the mat.\nI don't like it\n")
    assert main(["negate", str(corpus), "--rules", "reference"]) == 0
    out = capsys.readouterr().out
    assert "-> The cat did not sit on the mat ." in out and "-> Not I don't like it ." in out
    assert "reference rules" in out and "parsed in" in out
    assert main(["negate", str(corpus), "--rules", "paper"]) != 0
    assert "negation_rules" in capsys.readouterr().err
