"""Prepared datasets: the on-disk format ``sentsweep data prepare`` writes and trials memory-map.

A dataset folder (see :mod:`sentsweep.data.staging` for where it lives) holds, by kind:

- ``corpus``: text column ``sentences`` (every sentence in reading order), text column ``titles`` and
  ``doc_starts.npy`` (int64, the first sentence of each document, then the sentence count);
- ``labelled-pairs``: text columns ``s1`` and ``s2`` and ``labels.npy`` (int8; NLI as NLI_LABELS indices);
- ``scored-pairs``: text columns ``s1`` and ``s2`` and ``scores.npy`` (float64), the manifest's ``score_range``
  the ``[low, high]`` every score lies in;
- ``vectors``: text column ``words`` and ``vectors.npy`` (float32, one row per word, in file order);

plus ``manifest.json``: name, kind, rows, each file's bytes and SHA-256, a digest over them, where the
data came from, and when. Text columns are :class:`~sentsweep.data.columns.TextColumn` (a blob and an
offset index), so opening a 1M-sentence corpus creates no per-sentence Python object.

Trials name a prepared dataset as ``prepared:NAME`` (under the prepared root: ``SENTSWEEP_PREPARED``,
else ``<cache>/prepared``) or ``prepared:URI`` (a folder path or an ``s3://`` URI of one dataset).
"""

from __future__ import annotations

import array
import time
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np

from sentsweep.data.columns import NpyRowWriter, TextColumn, TextColumnWriter
from sentsweep.data.records import Document, LabelledPair, ScoredPair
from sentsweep.data.registry import PREPARED_PREFIX
from sentsweep.data.staging import (
    Store,
    dataset_store,
    file_sha256,
    files_digest,
    local_folder,
    read_manifest,
    store_at,
)
from sentsweep.data.streams import DocumentStart, document_title
from sentsweep.errors import DataError

PREFIX = PREPARED_PREFIX
FORMAT_VERSION = 1
_Pair = TypeVar("_Pair", LabelledPair, ScoredPair)


def is_prepared_ref(value: str) -> bool:
    """Whether ``value`` names a prepared dataset (``prepared:...``)."""
    return value.startswith(PREFIX)


def ref_store(ref: str) -> Store:
    """The store a ``prepared:NAME`` or ``prepared:URI`` reference points at."""
    target = ref[len(PREFIX) :] if is_prepared_ref(ref) else ref
    if not target:
        raise DataError(f"{ref!r} names no dataset: write prepared:NAME or prepared:URI")
    if "://" in target or "/" in target or target.startswith(("~", ".")):
        return store_at(target)
    return dataset_store(target)


# -- writing -----------------------------------------------------------------------------------------------

class CorpusWriter:
    """Documents in reading order: :meth:`add` takes the items of a corpus stream (see
    :mod:`sentsweep.data.streams`); a sentence before any DocumentStart opens an untitled document."""

    kind = "corpus"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.sentences = TextColumnWriter(folder, "sentences")
        self.titles = TextColumnWriter(folder, "titles")
        self.starts = array.array("q")
        self.titled = bytearray()

    def add(self, item: DocumentStart | str) -> None:
        if isinstance(item, DocumentStart):
            self.starts.append(len(self.sentences))
            self.titled.append(item.title is not None)
            self.titles.append(item.title or "")
            return
        if not self.starts:
            self.add(DocumentStart(None))
        self.sentences.append(item)

    @property
    def rows(self) -> int:
        return len(self.sentences)

    def close(self) -> dict[str, Any]:
        self.sentences.close()
        self.titles.close()
        self.starts.append(len(self.sentences))
        np.save(self.folder / "doc_starts.npy", np.frombuffer(self.starts, dtype=np.int64))
        np.save(self.folder / "doc_titled.npy", np.frombuffer(bytes(self.titled), dtype=np.int8))
        return {"documents": len(self.titled)}


class _PairWriter:
    """The two sentence columns of a pairs dataset, row by row; subclasses keep the value of each row."""

    kind = ""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.s1 = TextColumnWriter(folder, "s1")
        self.s2 = TextColumnWriter(folder, "s2")

    def _add_sentences(self, s1: str, s2: str) -> None:
        self.s1.append(s1)
        self.s2.append(s2)

    @property
    def rows(self) -> int:
        return len(self.s1)

    def _close_sentences(self) -> None:
        self.s1.close()
        self.s2.close()


class PairsWriter(_PairWriter):
    """Labelled pairs, row by row."""

    kind = "labelled-pairs"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.labels = bytearray()

    def add(self, pair: LabelledPair) -> None:
        self._add_sentences(pair.s1, pair.s2)
        self.labels.append(pair.label)

    def close(self) -> dict[str, Any]:
        self._close_sentences()
        np.save(self.folder / "labels.npy", np.frombuffer(bytes(self.labels), dtype=np.int8))
        return {}


class ScoredPairsWriter(_PairWriter):
    """Scored pairs, row by row (the score range is the source's: the caller adds it to the manifest)."""

    kind = "scored-pairs"

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.scores = array.array("d")

    def add(self, pair: ScoredPair) -> None:
        self._add_sentences(pair.s1, pair.s2)
        self.scores.append(pair.score)

    def close(self) -> dict[str, Any]:
        self._close_sentences()
        np.save(self.folder / "scores.npy", np.frombuffer(self.scores, dtype=np.float64))
        return {}


class VectorsWriter:
    """Word vectors, row by row (the dimension taken from the first row)."""

    kind = "vectors"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.words = TextColumnWriter(folder, "words")
        self.matrix: NpyRowWriter | None = None
        self.lowercase = True

    def add(self, row: tuple[str, np.ndarray]) -> None:
        word, vector = row
        if self.matrix is None:
            self.matrix = NpyRowWriter(self.folder / "vectors.npy", len(vector))
        self.words.append(word)
        self.matrix.append(vector)
        self.lowercase = self.lowercase and word == word.lower()

    @property
    def rows(self) -> int:
        return len(self.words)

    def close(self) -> dict[str, Any]:
        self.words.close()
        if self.matrix is None:
            raise DataError("no word vectors in the source")
        self.matrix.close()
        return {"dim": self.matrix.dim, "uncased": self.lowercase}


WRITERS: dict[str, type[CorpusWriter] | type[PairsWriter] | type[ScoredPairsWriter] | type[VectorsWriter]] = {
    w.kind: w for w in (CorpusWriter, PairsWriter, ScoredPairsWriter, VectorsWriter)
}


def manifest_for(folder: Path, name: str, kind: str, rows: int, extra: dict[str, Any],
                 source: dict[str, Any]) -> dict[str, Any]:
    """The manifest of the files written in ``folder`` (sizes and SHA-256, a digest over them)."""
    files = {p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)} for p in sorted(folder.iterdir())}
    digest = files_digest(files)
    return {"name": name, "kind": kind, "format_version": FORMAT_VERSION, "rows": rows, "files": files,
            "bytes": sum(f["bytes"] for f in files.values()), "digest": digest, "source": source,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **extra}


# -- reading -----------------------------------------------------------------------------------------------

@dataclass
class PreparedCorpus:
    """A prepared corpus: every sentence (:attr:`sentences`) and its documents, all memory-mapped."""

    name: str
    sentences: TextColumn
    titles: TextColumn
    starts: np.ndarray
    titled: np.ndarray

    def documents(self) -> list[Document]:
        """The documents in reading order; each one's ``sentences`` a lazy view of :attr:`sentences`."""
        count = len(self.starts) - 1
        bounds, titled = self.starts.tolist(), self.titled.tolist()
        return [
            Document(
                title=document_title(self.titles[i] if titled[i] else None, self.name, i + 1, count),
                sentences=self.sentences[bounds[i] : bounds[i + 1]],
            )
            for i in range(count)
        ]


class _PreparedPairColumns(Sequence[_Pair]):
    """Pairs read on demand from the text columns ``s1``, ``s2`` and one value per row (a record per access)."""

    values: np.ndarray

    def __init__(self, folder: Path) -> None:
        self.s1, self.s2 = TextColumn(folder, "s1"), TextColumn(folder, "s2")

    @abstractmethod
    def _record(self, s1: str, s2: str, value: Any) -> _Pair:
        """The record of one row: its two sentences and its value (a label or a score)."""

    def __len__(self) -> int:
        return len(self.s1)

    @overload
    def __getitem__(self, index: int) -> _Pair: ...
    @overload
    def __getitem__(self, index: slice) -> list[_Pair]: ...
    def __getitem__(self, index: int | slice) -> _Pair | list[_Pair]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._record(self.s1[index], self.s2[index], self.values[index].item())

    def __iter__(self) -> Iterator[_Pair]:
        values = iter(self.values.tolist())
        return (self._record(a, b, next(values)) for a, b in zip(self.s1, self.s2, strict=True))


class PreparedPairs(_PreparedPairColumns[LabelledPair]):
    """Prepared labelled pairs (``labels``: the int8 classes, memory-mapped)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.values = self.labels = np.load(folder / "labels.npy", mmap_mode="r")

    def _record(self, s1: str, s2: str, value: Any) -> LabelledPair:
        return LabelledPair(s1, s2, int(value))


class PreparedScoredPairs(_PreparedPairColumns[ScoredPair]):
    """Prepared scored pairs (``scores``, memory-mapped) and the ``score_range`` every score lies in."""

    def __init__(self, folder: Path, score_range: tuple[float, float]) -> None:
        super().__init__(folder)
        self.values = self.scores = np.load(folder / "scores.npy", mmap_mode="r")
        self.score_range = score_range

    def _record(self, s1: str, s2: str, value: Any) -> ScoredPair:
        return ScoredPair(s1, s2, float(value))


@dataclass
class PreparedVectors:
    """Prepared word vectors: ``words[i]`` has row ``matrix[i]`` (a read-only memory map)."""

    words: TextColumn
    matrix: np.ndarray
    uncased: bool
    source: str


def open_manifest(ref: str, kind: str) -> tuple[Store, dict[str, Any]]:
    """The store and manifest of a prepared dataset of ``kind``; a DataError saying how to prepare it."""
    store = ref_store(ref)
    manifest = read_manifest(store)
    name = ref[len(PREFIX) :] if is_prepared_ref(ref) else ref
    if manifest is None:
        from sentsweep.data.catalogue import CATALOGUE

        how = f"sentsweep data prepare {name}" if "/" not in name else "sentsweep data prepare NAME --to ROOT"
        how += "" if name in CATALOGUE else f" --kind {kind} --from FILE"  # a dataset of one's own (docs/own-data.md)
        raise DataError(f"dataset {ref!r} is not prepared at {store.uri}: run `{how}` once (the root defaults "
                        "to $SENTSWEEP_PREPARED, else ~/.cache/sentsweep/prepared)")
    if manifest.get("kind") != kind:
        raise DataError(f"prepared dataset {ref!r} is {manifest.get('kind')!r} data, not {kind!r}")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DataError(f"prepared dataset {ref!r} has format {manifest.get('format_version')}, this sentsweep "
                        f"reads {FORMAT_VERSION}: prepare it again with --force")
    return store, manifest


def open_prepared(ref: str, kind: str) -> Any:
    """A prepared dataset, memory-mapped from a local folder (copied once per machine when remote):
    :class:`PreparedCorpus`, :class:`PreparedPairs`, :class:`PreparedScoredPairs` or :class:`PreparedVectors`
    by ``kind``."""
    store, manifest = open_manifest(ref, kind)
    folder = local_folder(store, manifest)
    if kind == "corpus":
        return PreparedCorpus(manifest["name"], TextColumn(folder, "sentences"), TextColumn(folder, "titles"),
                              np.load(folder / "doc_starts.npy"), np.load(folder / "doc_titled.npy"))
    if kind == "labelled-pairs":
        return PreparedPairs(folder)
    if kind == "scored-pairs":
        low, high = manifest["score_range"]
        return PreparedScoredPairs(folder, (float(low), float(high)))
    return PreparedVectors(TextColumn(folder, "words"), np.load(folder / "vectors.npy", mmap_mode="r"),
                           bool(manifest.get("uncased")), store.uri)
