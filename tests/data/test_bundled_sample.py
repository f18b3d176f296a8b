"""Every loader on the bundled sample: counts equal what make_sample wrote, types and ranges hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sentsweep.data import (
    NLI_LABELS,
    STS_YEARS,
    TREC_LABELS,
    DataSource,
    Document,
    LabelledPair,
    LabelledSentence,
    ScoredPair,
    corpus,
    labelled_pairs,
    labelled_sentences,
    list_datasets,
    scored_pairs,
    sts_subsets,
)
from sentsweep.data.registry import KINDS, REGISTRY, split_files
from sentsweep.errors import DataError
from tools.make_sample import (
    BROWN_DOCUMENTS,
    ENWIKI_MIN_SENTENCES,
    PER_CLASS,
    PTB_LINES,
    ROWS,
    STS_PAIRS_PER_SUBSET,
)


@pytest.mark.parametrize("year", STS_YEARS)
def test_sts_subsets_keep_every_scored_pair(sample: DataSource, year: str) -> None:
    subsets = sts_subsets(year, sample)
    files = split_files(REGISTRY[year], None)
    assert list(subsets) == [Path(f).name.removeprefix("STS.input.").removesuffix(".txt") for f in files[::2]]
    for pairs in subsets.values():
        assert len(pairs) == STS_PAIRS_PER_SUBSET
        assert all(isinstance(p, ScoredPair) and 0.0 <= p.score <= 5.0 and p.s1 and p.s2 for p in pairs)


@pytest.mark.parametrize("year", ["sts15", "sts16"])
def test_sts_sample_keeps_unscored_lines_for_the_loader_to_drop(sample: DataSource, year: str) -> None:
    gold_files = split_files(REGISTRY[year], None)[1::2]
    lines = sum(len(sample.path(f).read_text().splitlines()) for f in gold_files)
    pairs = sum(map(len, sts_subsets(year, sample).values()))
    assert lines > pairs


@pytest.mark.parametrize(("name", "low", "high"), [("stsb", 0.0, 5.0), ("sickr", 1.0, 5.0)])
def test_scored_pairs(sample: DataSource, name: str, low: float, high: float) -> None:
    for split in REGISTRY[name].splits:
        pairs = scored_pairs(name, split, sample)
        assert len(pairs) == ROWS[name, split]
        assert all(isinstance(p, ScoredPair) and low <= p.score <= high and p.s1 and p.s2 for p in pairs)


@pytest.mark.parametrize(
    ("name", "rows_of", "labels"),
    [("mrpc", "mrpc", {0, 1}), ("snli", "snli", set(range(3))), ("sick-nli", "sickr", set(range(3)))],
)
def test_labelled_pairs(sample: DataSource, name: str, rows_of: str, labels: set[int]) -> None:
    for split in REGISTRY[name].splits:
        pairs = labelled_pairs(name, split, sample)
        assert len(pairs) == ROWS[rows_of, split]
        assert all(isinstance(p, LabelledPair) and p.s1 and p.s2 for p in pairs)
        assert {p.label for p in pairs} == labels


def test_sick_nli_maps_judgments_onto_nli_labels(sample: DataSource) -> None:
    lines = sample.path("senteval/SICK/SICK_trial.txt").read_text().splitlines()[1:]
    judgments = [line.split("\t")[4].strip().lower() for line in lines]
    pairs = labelled_pairs("sick-nli", "trial", sample)
    assert [NLI_LABELS[p.label] for p in pairs] == judgments


def test_sick_test_file_has_crlf_line_ends_that_do_not_leak(sample: DataSource) -> None:
    assert b"\r\n" in sample.path("senteval/SICK/SICK_test_annotated.txt").read_bytes()
    pairs = labelled_pairs("sick-nli", "test", sample)
    assert not any("\r" in p.s1 + p.s2 for p in pairs)


def test_mrpc_header_with_byte_order_mark(sample: DataSource) -> None:
    assert sample.path("senteval/MRPC/msr_paraphrase_train.txt").read_bytes().startswith(b"\xef\xbb\xbf")
    assert len(labelled_pairs("mrpc", "train", sample)) == ROWS["mrpc", "train"]


@pytest.mark.parametrize("name", sorted(PER_CLASS))
def test_binary_sentence_tasks(sample: DataSource, name: str) -> None:
    sentences = labelled_sentences(name, None, sample)
    assert labelled_sentences(name, "all", sample) == sentences
    assert all(isinstance(s, LabelledSentence) and s.text for s in sentences)
    assert [s.label for s in sentences] == [1] * PER_CLASS[name] + [0] * PER_CLASS[name]


def test_subj_subjective_is_one(sample: DataSource) -> None:
    first_subjective = sample.path("senteval/SUBJ/subj.subjective").read_text().splitlines()[0].strip()
    assert LabelledSentence(first_subjective, 1) in labelled_sentences("subj", data_dir=sample)


def test_trec(sample: DataSource) -> None:
    for split in ("train", "test"):
        sentences = labelled_sentences("trec", split, sample)
        assert len(sentences) == ROWS["trec", split]
        assert {s.label for s in sentences} <= set(range(len(TREC_LABELS)))
        assert not any(s.text.startswith(TREC_LABELS) for s in sentences)


def test_trec_needs_a_split(sample: DataSource) -> None:
    with pytest.raises(DataError, match="train, test"):
        labelled_sentences("trec", None, sample)


def test_sst2_absent_says_so(sample: DataSource) -> None:
    with pytest.raises(DataError, match="SST2 is not in the shared data") as caught:
        labelled_sentences("sst2", "dev", sample)
    assert "sentiment-dev" in str(caught.value)


def test_enwiki_keeps_whole_articles_in_order(sample: DataSource) -> None:
    documents = corpus("enwiki", sample)
    assert all(isinstance(d, Document) for d in documents)
    assert documents[0].title == "Anarchism"
    sentences = sum(len(d.sentences) for d in documents)
    assert sentences >= ENWIKI_MIN_SENTENCES
    assert sentences - len(documents[-1].sentences) < ENWIKI_MIN_SENTENCES
    # Aristotle's numbered list ("# growth and diminution, ...") stays inside the article.
    aristotle = next(d for d in documents if d.title == "Aristotle")
    assert any(s.startswith("# growth and diminution") for s in aristotle.sentences)


def test_brown(sample: DataSource) -> None:
    documents = corpus("brown", sample)
    assert len(documents) == BROWN_DOCUMENTS
    assert documents[0].title == "ca01 news"
    assert all(d.sentences for d in documents)


@pytest.mark.parametrize("name", sorted(PTB_LINES))
def test_ptb_is_one_document(sample: DataSource, name: str) -> None:
    (document,) = corpus(name, sample)
    assert document.title == name
    assert len(document.sentences) == PTB_LINES[name]


def test_corpus_from_a_path_reads_the_same_file(sample: DataSource) -> None:
    path = sample.path("corpora/enwiki_gensim_sample.txt")
    assert corpus(path) == corpus("enwiki", sample)
    assert corpus(str(path)) == corpus("enwiki", sample)
    assert corpus("corpora/brown_sentences.txt", sample) == corpus("brown", sample)


def test_every_registered_file_is_in_the_sample(sample: DataSource) -> None:
    infos = list_datasets()
    assert {i.name for i in infos} == {
        *STS_YEARS, "stsb", "sickr", "mrpc", "snli", "sick-nli", "mr", "cr", "subj", "mpqa", "trec", "sst2",
        "enwiki", "brown", "ptb-train", "ptb-valid", "ptb-test",
    }  # fmt: skip
    kinds = [i.kind for i in infos]
    assert kinds == sorted(kinds, key=KINDS.index)
    for info in infos:
        assert set(info.files) == set(info.splits)
        if info.name != "sst2":
            assert all(sample.path(f).is_file() for files in info.files.values() for f in files), info.name


def test_sample_stays_small(sample: DataSource) -> None:
    assert sum(p.stat().st_size for p in sample.root.rglob("*") if p.is_file()) < 2_000_000


def test_importing_the_data_layer_pulls_in_no_platform_or_hub() -> None:
    code = (
        "import sys, sentsweep.data; "
        "bad = {'ray', 'mlflow', 'datasets'} & set(sys.modules); assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
