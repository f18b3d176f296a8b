"""Reading large source files as streams: corpora sentence by sentence, NLI pairs and word vectors row by row.

Nothing here holds a whole file: ``sentsweep data prepare`` (:mod:`sentsweep.data.prepare`) feeds these
streams into the column writers of :mod:`sentsweep.data.prepared`, and the small-file loaders of
:mod:`sentsweep.data.corpora` use the same corpus grammar on their lists of lines.

Corpus grammar (``titled-documents``, :func:`stream_documents`): documents are separated by blank lines;
a document may open with a ``# title`` line (``#`` then a space); only the first line of a document can
be a title. The ``lines`` format (:func:`stream_one_document`, wiki1m) is one document, one sentence a line.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from sentsweep.data.catalogue import HUB_NLI_NAMES
from sentsweep.data.hub import nli_label_map
from sentsweep.data.records import LabelledPair
from sentsweep.data.textio import decode_lines, iter_file_lines
from sentsweep.errors import DataError

_TITLE = "# "
#: Parquet rows per batch.
BATCH_ROWS = 65_536


@dataclass(frozen=True, slots=True)
class DocumentStart:
    """Marks where a document opens in a corpus stream; ``title`` None when it has no title line."""

    title: str | None


def stream_documents(lines: Iterable[str]) -> Iterator[DocumentStart | str]:
    """The ``titled-documents`` grammar as a stream: a :class:`DocumentStart` before each document, then its
    sentences (stripped)."""
    inside = False
    for line in lines:
        text = line.strip()
        if not text:
            inside = False
            continue
        if not inside:
            inside = True
            if line.startswith(_TITLE):
                yield DocumentStart(text[len(_TITLE) :].strip())
                continue
            yield DocumentStart(None)
        yield text


def stream_one_document(lines: Iterable[str]) -> Iterator[DocumentStart | str]:
    """A one-sentence-a-line file as one untitled document (blank lines skipped, no title lines)."""
    yield DocumentStart(None)
    yield from (text for line in lines if (text := line.strip()))


def document_title(title: str | None, default_title: str, number: int, count: int) -> str:
    """An untitled document's name: ``default_title`` when it is the only one, else ``default_title:N``."""
    if title is not None:
        return title
    return default_title if count == 1 else f"{default_title}:{number}"


def stream_text_file(path: Path, fmt: str) -> Iterator[DocumentStart | str]:
    """A corpus text file, ``lines`` or ``documents`` format, streamed."""
    lines = iter_file_lines(path)
    return stream_one_document(lines) if fmt == "lines" else stream_documents(lines)


def parquet_batches(paths: Sequence[Path], columns: Sequence[str]) -> Iterator[tuple[Path, dict[str, list]]]:
    import pyarrow.parquet as pq

    for path in paths:
        try:
            handle = pq.ParquetFile(path)
        except (OSError, ValueError) as exc:
            raise DataError(f"not a readable parquet file: {exc}", file=path) from None
        missing = [c for c in columns if c not in handle.schema_arrow.names]
        if missing:
            raise DataError(f"parquet file lacks column(s) {', '.join(missing)} "
                            f"(has: {', '.join(handle.schema_arrow.names)})", file=path)
        for batch in handle.iter_batches(batch_size=BATCH_ROWS, columns=list(columns)):
            yield path, {c: batch.column(c).to_pylist() for c in columns}


def stream_parquet_text(paths: Sequence[Path], column: str) -> Iterator[DocumentStart | str]:
    """Parquet files with one sentence a row, in order, as one document (blank rows skipped)."""
    yield DocumentStart(None)
    for _, batch in parquet_batches(paths, [column]):
        yield from (text for value in batch[column] if value and (text := str(value).strip()))


def parquet_label_names(path: Path, column: str) -> Sequence[str] | None:
    """The ClassLabel names the hub stores in a parquet file's metadata (``huggingface`` key), if any."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    try:
        info = json.loads(meta[b"huggingface"])
        feature = info.get("info", info)["features"][column]
    except (KeyError, ValueError, TypeError):
        return None
    return feature.get("names") if isinstance(feature, dict) else None


def stream_nli_pairs(paths: Sequence[Path], columns: Mapping[str, str]) -> Iterator[LabelledPair]:
    """NLI pairs from hub parquet files, labels as NLI_LABELS indices; rows without a gold label (-1) dropped.

    The label names come from each file's metadata, else the hub's order (:data:`HUB_NLI_NAMES`).
    """
    premise, hypothesis, label = columns["premise"], columns["hypothesis"], columns["label"]
    maps: dict[Path, Mapping[int | str, int]] = {}
    for path, batch in parquet_batches(paths, [premise, hypothesis, label]):
        if path not in maps:
            found = nli_label_map(parquet_label_names(path, label)) or nli_label_map(HUB_NLI_NAMES)
            assert found is not None
            maps[path] = found
        mapping = maps[path]
        for s1, s2, value in zip(batch[premise], batch[hypothesis], batch[label], strict=True):
            if value is None or value < 0:
                continue
            if value not in mapping:
                raise DataError(f"label {value!r} is not one of the three NLI classes", file=path)
            yield LabelledPair(str(s1).strip(), str(s2).strip(), mapping[value])


def _glove_rows(raw: Iterable[bytes], source: Path) -> Iterator[tuple[str, np.ndarray]]:
    dim = None
    for number, line in enumerate(decode_lines(raw), start=1):
        parts = line.rstrip().split(" ")
        if dim is None:
            dim = len(parts) - 1
        if len(parts) != dim + 1:  # 840B holds a few "words" with spaces in them: skipped
            continue
        try:
            row = np.asarray(parts[1:], dtype=np.float32)
        except ValueError:
            raise DataError("not a GloVe line ('word v1 ... vd')", file=source, line=number) from None
        yield parts[0], row


def stream_glove(path: Path, member: str | None = None) -> Iterator[tuple[str, np.ndarray]]:
    """``(word, vector)`` rows of a GloVe text file, plain or the ``member`` of a ``.zip`` (its only
    ``.txt`` when not named)."""
    if path.suffix.lower() != ".zip":
        with path.open("rb") as handle:
            yield from _glove_rows(handle, path)
        return
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.endswith(".txt")]
        name = member if member is not None else (names[0] if len(names) == 1 else None)
        if name is None or name not in archive.namelist():
            raise DataError(f"cannot tell which member to read (text members: {', '.join(names)})", file=path)
        handle: IO[bytes]
        with archive.open(name) as handle:
            yield from _glove_rows(handle, path)
