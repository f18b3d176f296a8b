"""SemEval STS 2012-2016: every subset of a year, as SentEval's "all" protocol needs them."""

from __future__ import annotations

from pathlib import Path

from sentsweep.data.records import ScoredPair
from sentsweep.data.registry import locate
from sentsweep.data.source import DataSource
from sentsweep.data.textio import parse_score, read_aligned, split_columns

STS_YEARS: tuple[str, ...] = ("sts12", "sts13", "sts14", "sts15", "sts16")


def read_sts_subset(input_path: Path, gold_path: Path) -> list[ScoredPair]:
    """One subset: ``STS.input.X.txt`` (tab: s1, s2) line-aligned with ``STS.gs.X.txt`` (score 0-5).

    A pair whose gold line is empty was not scored and is dropped; every input line must still have
    exactly two columns, and the two files the same number of lines.
    """
    pairs: list[ScoredPair] = []
    for number, (pair_line, gold) in enumerate(read_aligned([input_path, gold_path]), start=1):
        s1, s2 = split_columns(pair_line, input_path, number, exactly=2)
        if gold.strip():
            pairs.append(ScoredPair(s1.strip(), s2.strip(), parse_score(gold, gold_path, number)))
    return pairs


def sts_subsets(year: str, data_dir: str | Path | DataSource | None = None) -> dict[str, list[ScoredPair]]:
    """Every subset of an STS year (``sts12`` .. ``sts16``), keyed by subset name in SentEval's order.

    Pairs with an empty gold score are dropped. Concatenate the values for the "all" protocol.
    """
    _, paths = locate(year, "sts-year", None, data_dir)
    subsets: dict[str, list[ScoredPair]] = {}
    for input_path, gold_path in zip(paths[::2], paths[1::2], strict=True):
        name = input_path.name.removeprefix("STS.input.").removesuffix(".txt")
        subsets[name] = read_sts_subset(input_path, gold_path)
    return subsets
