"""Sentence-pair datasets: STS-B and SICK-R (scored), MRPC, SNLI and SICK entailment (labelled)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from sentsweep.data.prepared import is_prepared_ref, open_prepared
from sentsweep.data.records import NLI_LABELS, LabelledPair, ScoredPair
from sentsweep.data.registry import locate, prepared_split
from sentsweep.data.source import DataSource
from sentsweep.data.textio import (
    BINARY_LABELS,
    label_index,
    numbered,
    parse_label,
    parse_score,
    read_aligned,
    read_lines,
    read_table,
    split_columns,
)

_NLI_INDEX = label_index(NLI_LABELS)


def read_stsb(path: Path) -> list[ScoredPair]:
    """STS Benchmark: tab-separated genre, file, year, id, score, s1, s2 (extra columns ignored)."""
    pairs: list[ScoredPair] = []
    for number, line in numbered(read_lines(path), skip_blank=True):
        fields = split_columns(line, path, number, at_least=7)
        pairs.append(ScoredPair(fields[5].strip(), fields[6].strip(), parse_score(fields[4], path, number)))
    return pairs


def _sick_rows(path: Path, column: str) -> Iterator[tuple[int, str, str, str]]:
    """``(line, sentence_A, sentence_B, value of column)`` for each row of a SICK file."""
    for number, row in read_table(path, ("sentence_A", "sentence_B", column)):
        yield number, row["sentence_A"].strip(), row["sentence_B"].strip(), row[column]


def read_sick_relatedness(path: Path) -> list[ScoredPair]:
    """SICK with its ``relatedness_score`` (1-5) as the gold score."""
    return [
        ScoredPair(s1, s2, parse_score(value, path, number, what="relatedness_score"))
        for number, s1, s2, value in _sick_rows(path, "relatedness_score")
    ]


def read_sick_entailment(path: Path) -> list[LabelledPair]:
    """SICK with its ``entailment_judgment`` as an index into NLI_LABELS."""
    return [
        LabelledPair(s1, s2, parse_label(value, _NLI_INDEX, path, number, what="entailment_judgment"))
        for number, s1, s2, value in _sick_rows(path, "entailment_judgment")
    ]


def read_mrpc(path: Path) -> list[LabelledPair]:
    """MRPC: header ``Quality, #1 ID, #2 ID, #1 String, #2 String``; Quality 1 = paraphrase."""
    return [
        LabelledPair(
            row["#1 String"].strip(),
            row["#2 String"].strip(),
            parse_label(row["Quality"], BINARY_LABELS, path, number, what="Quality"),
        )
        for number, row in read_table(path, ("Quality", "#1 String", "#2 String"))
    ]


def read_snli(s1_path: Path, s2_path: Path, labels_path: Path) -> list[LabelledPair]:
    """SentEval's SNLI: line-aligned ``s1.X``, ``s2.X`` and ``labels.X`` (NLI label names)."""
    return [
        LabelledPair(s1.strip(), s2.strip(), parse_label(label, _NLI_INDEX, labels_path, number))
        for number, (s1, s2, label) in enumerate(read_aligned([s1_path, s2_path, labels_path]), start=1)
    ]


_SCORED_READERS: dict[str, Callable[[Path], list[ScoredPair]]] = {
    "stsb": read_stsb,
    "sick-relatedness": read_sick_relatedness,
}
_LABELLED_READERS: dict[str, Callable[..., list[LabelledPair]]] = {
    "mrpc": read_mrpc,
    "snli": read_snli,
    "sick-entailment": read_sick_entailment,
}


def scored_pairs(name: str, split: str | None,
                 data_dir: str | Path | DataSource | None = None) -> Sequence[ScoredPair]:
    """Pairs with a real-valued gold score.

    ``stsb``: train/dev/test, gold 0-5. ``sickr``: train/trial/test, gold 1-5. ``prepared:NAME`` (or
    ``prepared:URI``): scored pairs of your own staged by ``sentsweep data prepare NAME --kind scored-pairs``, one
    set (``split`` is not read), memory-mapped as a :class:`~sentsweep.data.prepared.PreparedScoredPairs` that
    knows its ``score_range``.
    """
    if is_prepared_ref(name):
        return open_prepared(name, "scored-pairs")
    info, paths = locate(name, "scored-pairs", split, data_dir)
    return _SCORED_READERS[info.format](*paths)


def labelled_pairs(
    name: str, split: str, data_dir: str | Path | DataSource | None = None
) -> Sequence[LabelledPair]:
    """Pairs with a class: ``mrpc`` (train/test; 1 = paraphrase), ``snli`` (dev/test) and ``sick-nli``
    (train/trial/test), the NLI ones as indices into NLI_LABELS (contradiction 0, neutral 1, entailment 2).

    Splits staged by ``sentsweep data prepare`` (SNLI's ``train``: SNLI train, ``train+mnli``: SNLI then
    MultiNLI train; or any ``prepared:NAME``) come back as a memory-mapped
    :class:`~sentsweep.data.prepared.PreparedPairs`; the others as a list.
    """
    staged = prepared_split(name, "labelled-pairs", split)
    if staged is not None:
        return open_prepared(staged, "labelled-pairs")
    info, paths = locate(name, "labelled-pairs", split, data_dir)
    return _LABELLED_READERS[info.format](*paths)
