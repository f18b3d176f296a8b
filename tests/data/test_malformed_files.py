"""Malformed and missing files: every error names the file and the 1-based line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sentsweep.data import (
    DataSource,
    Document,
    corpus,
    labelled_pairs,
    labelled_sentences,
    resolve_data_dir,
    scored_pairs,
    sts_subsets,
)
from sentsweep.data.registry import REGISTRY
from sentsweep.errors import DataError

#: The ``write_file`` fixture (conftest): write text or bytes at a path under the tmp data root.
WriteFile = Callable[[str, str | bytes], Path]

STSB_ROW = (
    "main-captions\tMSRvid\t2012test\t0001\t{score}\tA plane is taking off.\tAn air plane is taking off.\n"
)
SICK_HEADER = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def _fails_at(
    path: Path, line: int | None, match: str, load: Callable[..., object], *args: object
) -> DataError:
    """Call ``load(*args)``; it must raise a DataError naming ``path`` (and ``line``) and matching."""
    with pytest.raises(DataError, match=match) as caught:
        load(*args)
    error = caught.value
    assert error.file == str(path)
    assert error.line == line
    location = f"{path.name}:{line}" if line is not None else path.name
    assert location in str(error)
    return error


def test_stsb_wrong_column_count(tmp_path: Path, write_file: WriteFile) -> None:
    path = write_file("senteval/STS/STSBenchmark/sts-dev.csv", STSB_ROW.format(score="5.0") + "a\tb\tc\n")
    _fails_at(path, 2, "at least 7 tab-separated columns, found 3", scored_pairs, "stsb", "dev", tmp_path)


def test_stsb_extra_columns_are_ignored(tmp_path: Path, write_file: WriteFile) -> None:
    write_file("senteval/STS/STSBenchmark/sts-dev.csv", STSB_ROW.format(score="3.8").rstrip("\n") + "\tsrc\n")
    (pair,) = scored_pairs("stsb", "dev", tmp_path)
    assert (pair.s2, pair.score) == ("An air plane is taking off.", 3.8)


@pytest.mark.parametrize("score", ["high", "nan", ""])
def test_stsb_unparseable_score(tmp_path: Path, write_file: WriteFile, score: str) -> None:
    rows = STSB_ROW.format(score="1.0") * 2 + STSB_ROW.format(score=score)
    path = write_file("senteval/STS/STSBenchmark/sts-test.csv", rows)
    _fails_at(path, 3, "score", scored_pairs, "stsb", "test", tmp_path)


def test_sick_bad_relatedness_and_unknown_judgment(tmp_path: Path, write_file: WriteFile) -> None:
    path = write_file(
        "senteval/SICK/SICK_trial.txt",
        SICK_HEADER
        + "1\tA man sings.\tA man is singing.\t4.9\tENTAILMENT\n"
        + "2\tA b.\tC d.\tfour\tMAYBE\n",
    )
    _fails_at(path, 3, "relatedness_score 'four'", scored_pairs, "sickr", "trial", tmp_path)
    _fails_at(path, 3, "unknown entailment_judgment 'MAYBE'", labelled_pairs, "sick-nli", "trial", tmp_path)


def test_sick_header_lacks_a_column(tmp_path: Path, write_file: WriteFile) -> None:
    path = write_file("senteval/SICK/SICK_train.txt", "pair_ID\tsentence_A\tsentence_B\n1\ta\tb\n")
    _fails_at(path, 1, "'relatedness_score'", scored_pairs, "sickr", "train", tmp_path)


def test_sick_row_with_missing_cell(tmp_path: Path, write_file: WriteFile) -> None:
    path = write_file("senteval/SICK/SICK_test_annotated.txt", SICK_HEADER + "1\ta\tb\t3.0\r\n" + "\r\n")
    _fails_at(path, 2, "expected 5 tab-separated columns, found 4", scored_pairs, "sickr", "test", tmp_path)


def test_mrpc_byte_order_mark_and_bad_quality(tmp_path: Path, write_file: WriteFile) -> None:
    path = write_file("senteval/MRPC/msr_paraphrase_test.txt", MRPC_HEADER + "1\t1\t2\tA.\tB.\n")
    assert labelled_pairs("mrpc", "test", tmp_path)[0].label == 1
    path = write_file(
        "senteval/MRPC/msr_paraphrase_test.txt", MRPC_HEADER + "1\t1\t2\tA.\tB.\n2\t3\t4\tC.\tD.\n"
    )
    _fails_at(path, 3, "unknown Quality '2'", labelled_pairs, "mrpc", "test", tmp_path)


def test_snli_unknown_label_and_misaligned_files(tmp_path: Path, write_file: WriteFile) -> None:
    write_file("senteval/SNLI/s1.dev", "A dog runs.\nA cat sleeps.\n")
    write_file("senteval/SNLI/s2.dev", "An animal moves.\nA cat is awake.\n")
    labels = write_file("senteval/SNLI/labels.dev", "entailment\n-\n")
    _fails_at(labels, 2, "unknown label '-'", labelled_pairs, "snli", "dev", tmp_path)
    labels = write_file("senteval/SNLI/labels.dev", "entailment\n")
    _fails_at(labels, 2, "has 1 lines but s1.dev has 2", labelled_pairs, "snli", "dev", tmp_path)
    write_file("senteval/SNLI/labels.dev", "entailment\ncontradiction\n")
    assert [p.label for p in labelled_pairs("snli", "dev", tmp_path)] == [2, 0]


def _sts13(write_file: WriteFile, inputs: str, golds: str) -> tuple[Path, Path]:
    """An STS13 folder whose FNWN and OnWN subsets are fine and whose headlines subset is given."""
    for subset in ("FNWN", "OnWN"):
        write_file(f"senteval/STS/STS13-en-test/STS.input.{subset}.txt", "a b\tc d\n")
        write_file(f"senteval/STS/STS13-en-test/STS.gs.{subset}.txt", "2.5\n")
    return (
        write_file("senteval/STS/STS13-en-test/STS.input.headlines.txt", inputs),
        write_file("senteval/STS/STS13-en-test/STS.gs.headlines.txt", golds),
    )


def test_sts_drops_empty_gold(tmp_path: Path, write_file: WriteFile) -> None:
    _sts13(write_file, "a\tb\nc\td\ne\tf\n", "1.0\n\n4.2\n")
    subsets = sts_subsets("sts13", tmp_path)
    assert list(subsets) == ["FNWN", "headlines", "OnWN"]
    assert [(p.s1, p.score) for p in subsets["headlines"]] == [("a", 1.0), ("e", 4.2)]


def test_sts_line_count_mismatch(tmp_path: Path, write_file: WriteFile) -> None:
    _, gold = _sts13(write_file, "a\tb\nc\td\ne\tf\n", "1.0\n2.0\n")
    _fails_at(gold, 3, "has 2 lines but STS.input.headlines.txt has 3", sts_subsets, "sts13", tmp_path)


def test_sts_wrong_column_count_and_bad_score(tmp_path: Path, write_file: WriteFile) -> None:
    inputs, _ = _sts13(write_file, "a\tb\nc d\n", "1.0\n2.0\n")
    _fails_at(inputs, 2, "expected 2 tab-separated columns, found 1", sts_subsets, "sts13", tmp_path)
    _, gold = _sts13(write_file, "a\tb\nc\td\n", "1.0\n2,5\n")
    _fails_at(gold, 2, "cannot parse score '2,5'", sts_subsets, "sts13", tmp_path)


def test_trec_malformed_lines(tmp_path: Path, write_file: WriteFile) -> None:
    path = write_file("senteval/TREC/TREC_10.label", "NUM:dist How far is it ?\nWhat is this ?\n")
    _fails_at(path, 2, "expected 'COARSE:fine question'", labelled_sentences, "trec", "test", tmp_path)
    path = write_file("senteval/TREC/TREC_10.label", "NUM:dist How far is it ?\nFOO:bar Why ?\n")
    _fails_at(path, 2, "unknown TREC class 'FOO'", labelled_sentences, "trec", "test", tmp_path)


def test_latin1_bytes_decode(tmp_path: Path, write_file: WriteFile) -> None:
    write_file("senteval/TREC/train_5500.label", b"LOC:city Which sister\xf0city ?\nHUM:ind Who ?\n")
    sentences = labelled_sentences("trec", "train", tmp_path)
    assert [(s.text, s.label) for s in sentences] == [("Which sister\u00f0city ?", 4), ("Who ?", 3)]


def test_sst2_when_present(tmp_path: Path, write_file: WriteFile) -> None:
    for split in ("train", "dev", "test"):
        write_file(f"senteval/SST/binary/sentiment-{split}", "a gripping film\t1\ndull\t0\n")
    assert [s.label for s in labelled_sentences("sst2", "dev", tmp_path)] == [1, 0]
    path = write_file("senteval/SST/binary/sentiment-dev", "a gripping film\t1\ndull\tnegative\n")
    _fails_at(path, 2, "unknown label 'negative'", labelled_sentences, "sst2", "dev", tmp_path)


def test_missing_file_names_the_path_and_how_to_get_data(tmp_path: Path) -> None:
    path = tmp_path / "senteval/STS/STSBenchmark/sts-train.csv"
    error = _fails_at(path, None, "missing data file", scored_pairs, "stsb", "train", tmp_path)
    assert "SENTSWEEP_DATA" in str(error) and "--data-dir" in str(error)


def test_unknown_names_and_splits(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="'sts12' is a sts-year dataset"):
        scored_pairs("sts12", "test", tmp_path)
    with pytest.raises(DataError, match="stsb has no split 'validation'; splits: train, dev, test"):
        scored_pairs("stsb", "validation", tmp_path)
    with pytest.raises(DataError, match="neither a registered corpus"):
        corpus("no-such-corpus", tmp_path)


def test_resolve_data_dir_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SENTSWEEP_DATA", raising=False)
    assert resolve_data_dir().is_sample
    monkeypatch.setenv("SENTSWEEP_DATA", str(tmp_path))
    assert resolve_data_dir() == DataSource(tmp_path.resolve(), is_sample=False)
    other = tmp_path / "other"
    other.mkdir()
    assert resolve_data_dir(other).root == other.resolve()
    assert resolve_data_dir(str(other)).root == other.resolve()


def test_missing_explicit_or_env_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(DataError, match="data directory does not exist") as caught:
        resolve_data_dir(missing)
    assert caught.value.file == str(missing)
    monkeypatch.setenv("SENTSWEEP_DATA", str(missing))
    with pytest.raises(DataError, match="named by SENTSWEEP_DATA"):
        resolve_data_dir()


def test_corpus_file_formats(tmp_path: Path, write_file: WriteFile) -> None:
    titled = write_file("titled.txt", "# First\nOne.\n# 1. a list item\nTwo.\n\n# Second\nThree.\n\n")
    assert [(d.title, d.sentences) for d in corpus(titled)] == [
        ("First", ("One.", "# 1. a list item", "Two.")),
        ("Second", ("Three.",)),
    ]
    plain = write_file("wiki1m.txt", "One.\nTwo.\n")
    assert [(d.title, d.sentences) for d in corpus(plain)] == [("wiki1m", ("One.", "Two."))]
    paragraphs = write_file("paragraphs.txt", "One.\nTwo.\n\n\nThree.\n")
    assert [d.title for d in corpus(paragraphs)] == ["paragraphs:1", "paragraphs:2"]
    assert corpus("paragraphs.txt", tmp_path) == corpus(paragraphs)
    hashtags = write_file("tweets.txt", "# Hashtags are popular .\nSecond .\n\n# After a blank .\nFourth .\n")
    assert [s for d in corpus(hashtags) for s in d.sentences] == ["Second .", "Fourth ."]  # the grammar's titles
    assert corpus(hashtags, file_format="lines") == [Document("tweets", (
        "# Hashtags are popular .", "Second .", "# After a blank .", "Fourth ."))]  # every line a sentence
    with pytest.raises(ValueError, match="file_format must be documents or lines"):
        corpus(hashtags, file_format="tsv")


def test_ptb_first_line_is_never_a_title(tmp_path: Path, write_file: WriteFile) -> None:
    write_file(REGISTRY["ptb-valid"].files["all"][0], " # N million notes\n the end\n")
    assert corpus("ptb-valid", tmp_path)[0].sentences == ("# N million notes", "the end")


def test_a_missing_file_names_the_sweep_field_that_chooses_the_data(tmp_path: Path) -> None:
    """A data folder without STS-B: the line says how to choose the data in a sweep config (``data_dir``), on a
    command line (``--data-dir``) and in the environment, and points at the page that describes the layout."""
    with pytest.raises(DataError) as err:
        scored_pairs("stsb", "train", data_dir=tmp_path)
    message = str(err.value)
    assert "data_dir" in message.replace("--data-dir", "") and "--data-dir" in message
    assert "SENTSWEEP_DATA" in message and "docs/data.md" in message and "\n" not in message
