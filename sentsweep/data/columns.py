"""Columns on disk that are read without loading them: text as a byte blob plus an offset index, numbers as ``.npy``.

A text column ``NAME`` is two files:

- ``NAME.txt``: the UTF-8 strings one after the other, each followed by ``\\n`` (so the file reads like a
  one-string-a-line text file; a string may itself hold ``\\n``: the index, not the newline, delimits it);
- ``NAME.idx.npy``: ``n + 1`` int64 byte offsets; string ``i`` is ``blob[off[i] : off[i + 1] - 1]``.

:class:`TextColumn` memory-maps both: ``len``, indexing and slicing cost O(1) and create no Python object
until a string is asked for, so a 1M-sentence corpus is two mapped files, not a million ``str``. Iteration
decodes in chunks and tells the kernel it is done with each chunk's pages (``MADV_DONTNEED``: the pages
are file-backed and read-only, so they are simply dropped from this process and re-read on demand).
Numeric columns are plain ``.npy`` files opened with ``mmap_mode="r"``; :class:`NpyRowWriter` writes a
2-d ``.npy`` row by row when the number of rows is not known in advance (GloVe).
"""

from __future__ import annotations

import array
import mmap
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, overload

import numpy as np

from sentsweep.errors import DataError

#: Strings decoded per step when iterating (and pages released after each step).
CHUNK = 65_536


def blob_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.txt"


def index_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.idx.npy"


class TextColumnWriter:
    """Append strings to the text column ``name`` in ``folder``; :meth:`close` writes the index."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder, self.name = folder, name
        self._blob: IO[bytes] = blob_path(folder, name).open("wb")
        self._offsets = array.array("q", [0])  # 8 bytes a row, not a Python int per row

    def append(self, text: str) -> None:
        data = text.encode("utf-8") + b"\n"
        self._blob.write(data)
        self._offsets.append(self._offsets[-1] + len(data))

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def close(self) -> None:
        self._blob.close()
        np.save(index_path(self.folder, self.name), np.frombuffer(self._offsets, dtype=np.int64))


class TextColumn(Sequence[str]):
    """A memory-mapped text column (or a ``[start, stop)`` view of one), read as a sequence of ``str``."""

    def __init__(self, folder: Path, name: str, *, _view: tuple[mmap.mmap | None, np.ndarray] | None = None,
                 start: int = 0, stop: int | None = None) -> None:
        if _view is None:
            offsets = _load_index(index_path(folder, name))
            _view = (_map(blob_path(folder, name), int(offsets[-1])), offsets)
        self._blob, self._offsets = _view
        self._folder, self._name = folder, name
        total = len(self._offsets) - 1
        self._start, self._stop = start, total if stop is None else stop

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> TextColumn: ...
    def __getitem__(self, index: int | slice) -> str | TextColumn:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a TextColumn slice takes no step")
            return TextColumn(self._folder, self._name, _view=(self._blob, self._offsets),
                              start=self._start + start, stop=self._start + max(start, stop))
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for {n} strings")
        row = self._start + (index % n)
        begin, end = int(self._offsets[row]), int(self._offsets[row + 1])
        return self._decode(begin, end)

    def _decode(self, begin: int, end: int) -> str:
        if self._blob is None:  # an empty column has no mapping
            return ""
        return self._blob[begin : end - 1].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        page = mmap.PAGESIZE
        for first in range(self._start, self._stop, CHUNK):
            bounds = self._offsets[first : min(first + CHUNK, self._stop) + 1].tolist()
            for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
                yield self._decode(begin, end)
            if self._blob is not None and hasattr(mmap, "MADV_DONTNEED"):
                low, high = bounds[0] // page * page, bounds[-1] // page * page
                if high > low:
                    self._blob.madvise(mmap.MADV_DONTNEED, low, high - low)

    def nbytes(self) -> int:
        """Bytes of text (with the separators) in this view."""
        return int(self._offsets[self._stop]) - int(self._offsets[self._start])

    def __repr__(self) -> str:
        return f"TextColumn({self._folder / self._name}, rows {self._start}:{self._stop})"


def _load_index(path: Path) -> np.ndarray:
    try:
        offsets = np.load(path, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise DataError(f"unreadable offset index: {exc}", file=path) from None
    if offsets.ndim != 1 or len(offsets) < 1 or offsets.dtype != np.int64:
        raise DataError("not an offset index (int64, n + 1 offsets)", file=path)
    return offsets


def _map(path: Path, expected: int) -> mmap.mmap | None:
    """The blob mapped read-only (None when it is empty: mmap refuses empty files)."""
    size = path.stat().st_size if path.is_file() else -1
    if size != expected:
        raise DataError(f"text blob has {size} bytes, its index says {expected}: prepare it again", file=path)
    if size == 0:
        return None
    with path.open("rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


class NpyRowWriter:
    """Write a float32 ``(rows, dim)`` ``.npy`` one row at a time; the header is fixed up on :meth:`close`.

    The header is given a fixed 128 bytes (numpy's format aligns the data to 64 bytes; a 2-d float32
    header needs about 70), so the rows can be streamed before their number is known.
    """

    HEADER = 128

    def __init__(self, path: Path, dim: int) -> None:
        self.path, self.dim, self.rows = path, dim, 0
        self._handle: IO[bytes] = path.open("wb")
        self._handle.write(b"\0" * self.HEADER)

    def append(self, row: np.ndarray) -> None:
        self._handle.write(np.ascontiguousarray(row, dtype="<f4").tobytes())
        self.rows += 1

    def close(self) -> None:
        header = repr({"descr": "<f4", "fortran_order": False, "shape": (self.rows, self.dim)}).encode("latin1")
        prefix = np.lib.format.magic(1, 0)
        room = self.HEADER - len(prefix) - 2
        self._handle.seek(0)
        self._handle.write(prefix + struct.pack("<H", room) + header.ljust(room - 1) + b"\n")
        self._handle.close()
