"""SentEval's samples as its loaders make them: blank lines kept, Latin-1, token joins, sorted order, labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sentsweep.data import resolve_data_dir
from sentsweep.evaluation.senteval.loaders import load_task


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_two_file_tasks_as_senteval_reads_them(tmp_path: Path) -> None:
    _write(tmp_path / "senteval/CR/custrev.pos", b"a  good   one\n\ncaf\xe9 is fine\n")
    _write(tmp_path / "senteval/CR/custrev.neg", b"bad\nno good at all\n")
    split = load_task("cr", resolve_data_dir(tmp_path)).splits["all"]
    # 5 samples (the blank line is an empty one), sorted by (tokens, label); Latin-1; one space between tokens
    assert split.a == ["", "bad", "a good one", "café is fine", "no good at all"]
    np.testing.assert_array_equal(split.y, [1, 0, 1, 1, 0])
    _write(tmp_path / "senteval/SUBJ/subj.subjective", b"i loved it\n")
    _write(tmp_path / "senteval/SUBJ/subj.objective", b"the film is set in rome\n")
    subj = load_task("subj", resolve_data_dir(tmp_path)).splits["all"]
    assert dict(zip(subj.a, subj.y.tolist(), strict=True)) == {"i loved it": 0, "the film is set in rome": 1}


def test_pairs_sorted_by_both_lengths_then_label(tmp_path: Path) -> None:
    rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\ta b c\tx", "0\t3\t4\ta b\tx y z",
            "1\t5\t6\ta b\tx y", "0\t7\t8\ta b\tx y"]
    for split in ("train", "test"):
        _write(tmp_path / f"senteval/MRPC/msr_paraphrase_{split}.txt", ("\n".join(rows) + "\n").encode())
    train = load_task("mrpc", resolve_data_dir(tmp_path)).splits["train"]
    assert list(zip(train.a, train.b or [], train.y.tolist(), strict=True)) == [
        ("a b", "x y", 0), ("a b", "x y", 1), ("a b", "x y z", 0), ("a b c", "x", 1)]


def test_shared_data_counts_are_senteval_s(shared_data: Path) -> None:
    source = resolve_data_dir(shared_data)
    cr = load_task("cr", source).splits["all"]
    assert len(cr) == 3775 and cr.a.count("") == 4  # 3771 when blank lines are dropped
    assert len(load_task("mpqa", source).splits["all"]) == 10606
    sick = load_task("sick_relatedness", source).splits
    assert {k: len(v) for k, v in sick.items()} == {"train": 4500, "dev": 500, "test": 4927}
