"""SentEval's task loaders, reproduced: the samples, their order and their text as the toolkit has them.

The classifier sees the samples in the order SentEval builds, so fold membership and batch order (and so
the figures) depend on it:

- files are read as SentEval reads them: MR, CR, SUBJ, MPQA and TREC as Latin-1, the others as UTF-8;
  the two-file tasks split lines with ``str.splitlines`` and keep blank lines as empty samples (CR has
  3775 samples, 4 of them empty; MPQA 10606);
- a sample is its whitespace tokens (``line.split()``), and the text handed to the encoder is those
  tokens joined by one space (SimCSE's batcher);
- labels: positive file 1, negative 0; SUBJ's *objective* file is SentEval's first (label 1); TREC's
  coarse classes ABBR, DESC, ENTY, HUM, LOC, NUM are 0..5; SICK-E contradiction 0, neutral 1,
  entailment 2; SICK-R keeps its 1-5 score;
- every split is sorted as SentEval sorts it before embedding (stable): single sentences by
  ``(number of tokens, label)``, pairs by ``(tokens of A, tokens of B, label)``.

File locations come from the data registry (:func:`sentsweep.data.registry.locate`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sentsweep.data.registry import locate
from sentsweep.data.source import DataSource
from sentsweep.errors import DataError

#: TREC's coarse classes in SentEval's index order.
TREC_CLASSES: tuple[str, ...] = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
#: SICK entailment labels in SentEval's index order.
SICK_ENTAILMENT: tuple[str, ...] = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")
#: Tasks of two sentence files without splits: the registry name and whether SentEval reads the files in
#: the opposite order of the registry's (SUBJ: objective first, label 1).
BINARY_TASKS: dict[str, bool] = {"mr": False, "cr": False, "subj": True, "mpqa": False}


@dataclass
class Split:
    """One split: sentences ``a`` (and ``b`` for pair tasks) and the labels ``y`` (class or score)."""

    a: list[str]
    y: np.ndarray
    b: list[str] | None = None

    def __len__(self) -> int:
        return len(self.a)

    def texts(self) -> list[str]:
        """Every sentence of the split (both sides of a pair)."""
        return self.a + (self.b or [])


@dataclass
class TaskData:
    """A task's splits in SentEval's sample order (``all`` for MR, CR, SUBJ, MPQA)."""

    name: str
    splits: dict[str, Split]

    def texts(self) -> list[str]:
        """Every sentence of every split."""
        return [s for split in self.splits.values() for s in split.texts()]


def _lines(path: Path, encoding: str) -> list[str]:
    """The file's lines as SentEval iterates them (``for line in f``; line ends kept, stripped later)."""
    with path.open(encoding=encoding) as f:
        return list(f)


def _splitlines(path: Path, encoding: str) -> list[str]:
    """The file's lines as SentEval's two-file tasks read them (``f.read().splitlines()``)."""
    with path.open(encoding=encoding) as f:
        return f.read().splitlines()


def _join(tokens: list[str]) -> str:
    return " ".join(tokens)


def _sorted_single(samples: list[list[str]], labels: list[Any]) -> Split:
    order = sorted(zip(samples, labels, strict=True), key=lambda z: (len(z[0]), z[1]))
    return Split([_join(x) for x, _ in order], np.array([y for _, y in order]))


def _sorted_pairs(a: list[list[str]], b: list[list[str]], labels: list[Any]) -> Split:
    order = sorted(zip(a, b, labels, strict=True), key=lambda z: (len(z[0]), len(z[1]), z[2]))
    return Split([_join(x) for x, _, _ in order], np.array([y for _, _, y in order]),
                 [_join(x) for _, x, _ in order])


def _fields(line: str, path: Path, number: int, count: int) -> list[str]:
    parts = line.strip().split("\t")
    if len(parts) < count:
        raise DataError(f"expected at least {count} tab-separated fields, got {len(parts)}", file=path, line=number)
    return parts


def load_binary(name: str, source: DataSource) -> TaskData:
    """MR, CR, SUBJ, MPQA: SentEval's BinaryClassifierEval (one split, ``all``)."""
    _, paths = locate(name, "labelled-sentences", None, source)
    first, second = reversed(paths) if BINARY_TASKS[name] else paths
    pos = [line.split() for line in _splitlines(first, "latin-1")]
    neg = [line.split() for line in _splitlines(second, "latin-1")]
    return TaskData(name, {"all": _sorted_single(pos + neg, [1] * len(pos) + [0] * len(neg))})


def load_trec(source: DataSource) -> TaskData:
    """TREC: ``COARSE:fine question`` lines (Latin-1), train and test."""
    splits = {}
    for split in ("train", "test"):
        _, (path,) = locate("trec", "labelled-sentences", split, source)
        samples, labels = [], []
        for number, line in enumerate(_lines(path, "latin-1"), start=1):
            target, colon, rest = line.strip().partition(":")
            fine, space, question = rest.partition(" ")
            if not colon or not space or target not in TREC_CLASSES:
                raise DataError("expected 'COARSE:fine question' with a TREC class", file=path, line=number)
            samples.append(question.split())
            labels.append(TREC_CLASSES.index(target))
        splits[split] = _sorted_single(samples, labels)
    return TaskData("trec", splits)


def load_sst2(source: DataSource) -> TaskData:
    """SST2: ``sentence<TAB>label`` (UTF-8), train, dev and test."""
    splits = {}
    for split in ("train", "dev", "test"):
        _, (path,) = locate("sst2", "labelled-sentences", split, source)
        samples, labels = [], []
        for number, line in enumerate(_lines(path, "utf-8"), start=1):
            text, label = _fields(line, path, number, 2)[:2]
            samples.append(text.split())
            labels.append(int(label))
        splits[split] = _sorted_single(samples, labels)
    return TaskData("sst2", splits)


def _read_pairs(path: Path, first: int, label: int, parse: Callable[[str], Any]) -> Split:
    """A tab-separated pair file after its header line: sentences in columns ``first`` and ``first + 1``,
    the label in column ``label`` (UTF-8, as SentEval reads MRPC and SICK)."""
    a, b, labels = [], [], []
    for number, line in enumerate(_lines(path, "utf-8")[1:], start=2):
        parts = _fields(line, path, number, 5)
        a.append(parts[first].split())
        b.append(parts[first + 1].split())
        try:
            labels.append(parse(parts[label]))
        except (ValueError, KeyError):
            raise DataError(f"bad label {parts[label]!r}", file=path, line=number) from None
    return _sorted_pairs(a, b, labels)


def load_mrpc(source: DataSource) -> TaskData:
    """MRPC: the header line dropped; columns Quality, #1 ID, #2 ID, #1 String, #2 String (UTF-8)."""
    splits = {split: _read_pairs(locate("mrpc", "labelled-pairs", split, source)[1][0], 3, 0, int)
              for split in ("train", "test")}
    return TaskData("mrpc", splits)


def _load_sick(name: str, column: int, parse: Callable[[str], Any], source: DataSource) -> TaskData:
    splits = {key: _read_pairs(locate("sickr", "scored-pairs", split, source)[1][0], 1, column, parse)
              for split, key in (("train", "train"), ("trial", "dev"), ("test", "test"))}
    return TaskData(name, splits)


def load_sick_relatedness(source: DataSource) -> TaskData:
    """SICK-R: the 1-5 relatedness score of each pair; train, dev (SICK_trial) and test."""
    return _load_sick("sick_relatedness", 3, float, source)


def load_sick_entailment(source: DataSource) -> TaskData:
    """SICK-E: contradiction 0, neutral 1, entailment 2; train, dev (SICK_trial) and test."""
    return _load_sick("sick_entailment", 4, SICK_ENTAILMENT.index, source)


def load_task(name: str, source: DataSource) -> TaskData:
    """The task ``name`` in SentEval's sample order (DataError when its files are absent)."""
    if name in BINARY_TASKS:
        return load_binary(name, source)
    loaders: dict[str, Callable[[DataSource], TaskData]] = {
        "trec": load_trec,
        "sst2": load_sst2,
        "mrpc": load_mrpc,
        "sick_relatedness": load_sick_relatedness,
        "sick_entailment": load_sick_entailment,
    }
    if name not in loaders:
        raise ValueError(f"no SentEval loader for {name!r}")
    return loaders[name](source)
