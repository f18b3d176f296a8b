"""Row counts of the full shared data against ../shared/data/MANIFEST.md (skipped when it is absent).

Where the loaders and the MANIFEST count differently, the test pins both: the MANIFEST's figure from
the raw file and the loader's figure, with the difference explained.
"""

from __future__ import annotations

import pytest

from sentsweep.data import (
    DataSource,
    corpus,
    labelled_pairs,
    labelled_sentences,
    scored_pairs,
    sts_subsets,
)
from sentsweep.data.registry import REGISTRY

# MANIFEST counts STS pairs after dropping unscored ones; the raw gold files have these many lines.
STS_PAIRS = {"sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 3000, "sts16": 1186}
STS_GOLD_LINES = {"sts12": 3108, "sts13": 1500, "sts14": 3750, "sts15": 8500, "sts16": 9183}


def _lines(source: DataSource, name: str) -> list[str]:
    """The raw lines of every file of a split-less dataset."""
    return [line for f in REGISTRY[name].files["all"] for line in source.path(f).read_text().split("\n")[:-1]]


@pytest.mark.parametrize("year", sorted(STS_PAIRS))
def test_sts_years(shared_source: DataSource, year: str) -> None:
    subsets = sts_subsets(year, shared_source)
    assert sum(map(len, subsets.values())) == STS_PAIRS[year]
    gold_files = REGISTRY[year].files["test"][1::2]
    assert sum(len(shared_source.path(f).read_text().splitlines()) for f in gold_files) == STS_GOLD_LINES[year]


def test_sts16_subsets(shared_source: DataSource) -> None:
    counts = {name: len(pairs) for name, pairs in sts_subsets("sts16", shared_source).items()}
    assert counts == {
        "answer-answer": 254,
        "headlines": 249,
        "plagiarism": 230,
        "postediting": 244,
        "question-question": 209,
    }


@pytest.mark.parametrize(
    ("name", "counts"),
    [
        ("stsb", {"train": 5749, "dev": 1500, "test": 1379}),
        ("sickr", {"train": 4500, "trial": 500, "test": 4927}),
    ],
)
def test_scored_pairs(shared_source: DataSource, name: str, counts: dict[str, int]) -> None:
    assert {split: len(scored_pairs(name, split, shared_source)) for split in counts} == counts


@pytest.mark.parametrize(
    ("name", "counts"),
    [
        ("mrpc", {"train": 4076, "test": 1725}),
        ("snli", {"dev": 9842, "test": 9824}),
        ("sick-nli", {"train": 4500, "trial": 500, "test": 4927}),
    ],
)
def test_labelled_pairs(shared_source: DataSource, name: str, counts: dict[str, int]) -> None:
    assert {split: len(labelled_pairs(name, split, shared_source)) for split in counts} == counts


def test_mrpc_paraphrase_share(shared_source: DataSource) -> None:
    assert sum(p.label for p in labelled_pairs("mrpc", "train", shared_source)) == 2753


@pytest.mark.parametrize(
    ("name", "manifest", "positives", "blank_positive", "blank_negative"),
    # CR and MPQA have blank lines (at the end of each file, and one inside each CR file) that SentEval
    # keeps as empty sentences and MANIFEST counts; the loader drops them.
    [
        ("mr", 10662, 5331, 0, 0),
        ("cr", 3775, 2407, 2, 2),
        ("subj", 10000, 5000, 0, 0),
        ("mpqa", 10606, 3312, 1, 2),
    ],
)
def test_binary_sentence_tasks(
    shared_source: DataSource,
    name: str,
    manifest: int,
    positives: int,
    blank_positive: int,
    blank_negative: int,
) -> None:
    lines = _lines(shared_source, name)
    assert len(lines) == manifest
    assert sum(not line.strip() for line in lines) == blank_positive + blank_negative
    sentences = labelled_sentences(name, None, shared_source)
    assert len(sentences) == manifest - blank_positive - blank_negative
    assert all(s.text for s in sentences)
    assert sum(s.label for s in sentences) == positives - blank_positive


def test_trec(shared_source: DataSource) -> None:
    assert len(labelled_sentences("trec", "train", shared_source)) == 5452
    assert len(labelled_sentences("trec", "test", shared_source)) == 500


def test_trec_latin1_line_decodes(shared_source: DataSource) -> None:
    texts = [s.text for s in labelled_sentences("trec", "train", shared_source)]
    assert any("sister\u00f0city" in t for t in texts)


def test_enwiki(shared_source: DataSource) -> None:
    documents = corpus("enwiki", shared_source)
    assert len(documents) == 96
    sentences = [s for d in documents for s in d.sentences]
    # MANIFEST's 19,217 leaves out 52 Wikipedia numbered-list items ("# item") inside articles; they
    # are text of their article, so the loader keeps them.
    list_items = sum(s.startswith("# ") for s in sentences)
    assert list_items == 52
    assert len(sentences) - list_items == 19_217


def test_brown(shared_source: DataSource) -> None:
    documents = corpus("brown", shared_source)
    assert len(documents) == 500
    assert sum(len(d.sentences) for d in documents) == 57_340


@pytest.mark.parametrize(
    ("name", "count"), [("ptb-train", 42_068), ("ptb-valid", 3_370), ("ptb-test", 3_761)]
)
def test_ptb(shared_source: DataSource, name: str, count: int) -> None:
    (document,) = corpus(name, shared_source)
    assert len(document.sentences) == count
