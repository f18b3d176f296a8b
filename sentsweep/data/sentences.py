"""Single-sentence classification tasks of SentEval: MR, CR, SUBJ, MPQA, TREC, SST2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sentsweep.data.records import LabelledSentence
from sentsweep.data.registry import locate
from sentsweep.data.source import DataSource
from sentsweep.data.textio import BINARY_LABELS, label_index, numbered, parse_label, read_lines, split_columns
from sentsweep.errors import DataError

#: TREC coarse classes; a question's label is its index here (fixed, sorted).
TREC_LABELS: tuple[str, ...] = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")

_TREC_INDEX = label_index(TREC_LABELS)


def read_sentences(path: Path, label: int) -> list[LabelledSentence]:
    """One sentence a line, all with ``label``; blank lines are skipped (CR and MPQA have a few)."""
    return [LabelledSentence(line.strip(), label) for _, line in numbered(read_lines(path), skip_blank=True)]


def read_two_files(positive: Path, negative: Path) -> list[LabelledSentence]:
    """A positive file (label 1) followed by a negative file (label 0), as SentEval orders them."""
    return read_sentences(positive, 1) + read_sentences(negative, 0)


def read_trec(path: Path) -> list[LabelledSentence]:
    """TREC ``COARSE:fine question`` lines; the label is the coarse class's index in TREC_LABELS."""
    sentences: list[LabelledSentence] = []
    for number, line in numbered(read_lines(path), skip_blank=True):
        tag, colon, rest = line.partition(":")
        fine, space, question = rest.partition(" ")
        if not colon or not fine or not space or not question.strip():
            raise DataError("expected 'COARSE:fine question'", file=path, line=number)
        label = parse_label(tag, _TREC_INDEX, path, number, what="TREC class")
        sentences.append(LabelledSentence(question.strip(), label))
    return sentences


def read_sst(path: Path) -> list[LabelledSentence]:
    """SentEval's SST files: ``sentence<TAB>label`` with label 0 or 1."""
    sentences: list[LabelledSentence] = []
    for number, line in numbered(read_lines(path), skip_blank=True):
        text, label = split_columns(line, path, number, exactly=2)
        sentences.append(LabelledSentence(text.strip(), parse_label(label, BINARY_LABELS, path, number)))
    return sentences


_READERS: dict[str, Callable[..., list[LabelledSentence]]] = {
    "two-files": read_two_files,
    "trec": read_trec,
    "sst": read_sst,
}


def labelled_sentences(
    name: str, split: str | None = None, data_dir: str | Path | DataSource | None = None
) -> list[LabelledSentence]:
    """Sentences with a class.

    ``mr``, ``cr``, ``subj``, ``mpqa`` have no splits (``split`` None or ``"all"``): positive (SUBJ:
    subjective) 1 then negative (objective) 0. ``trec`` has train/test, labels index TREC_LABELS.
    ``sst2`` has train/dev/test when the data directory holds SentEval's ``SST/binary`` folder.
    """
    info, paths = locate(name, "labelled-sentences", split, data_dir)
    return _READERS[info.format](*paths)
