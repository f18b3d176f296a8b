"""A user's scored sentence pairs, read row by row from CSV, TSV, JSONL or parquet (the hub's layout).

Every row gives two sentences and a score. CSV and TSV files open with a header line that names the
columns; a JSONL line is one object holding them; parquet files hold them as columns. The column names
default to the hub's STS sets' (``sentence1``, ``sentence2``, ``score``); ``--columns`` names others.

Each bad row is one :class:`~sentsweep.errors.DataError` naming the file and line (parquet: the row):
a wrong column count, an empty sentence, a score that is not a number or lies outside the declared
range, a line that is not a JSON object. Blank lines are skipped. Scores are kept as written: the range
travels with the prepared data, so the methods map it themselves (the MSE baseline onto [0, 1]).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sentsweep.data.records import ScoredPair
from sentsweep.data.streams import parquet_batches
from sentsweep.data.textio import iter_file_lines
from sentsweep.errors import DataError


@dataclass(frozen=True)
class ScoreRange:
    """The closed range ``[low, high]`` every score of a dataset lies in."""

    low: float
    high: float

    @classmethod
    def parse(cls, text: str) -> ScoreRange:
        """``LOW,HIGH`` (e.g. ``0,5``), two finite numbers with LOW below HIGH."""
        parts = [p.strip() for p in text.split(",")]
        try:
            low, high = (float(p) for p in parts)
        except ValueError:
            raise DataError(f"--score-range: {text!r} is not LOW,HIGH (two numbers, e.g. 0,5)") from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise DataError(f"--score-range: {text!r} needs finite LOW < HIGH")
        return cls(low, high)

    def __str__(self) -> str:
        return f"{self.low:g}..{self.high:g}"


@dataclass(frozen=True)
class RowReader:
    """Turns the values of one row into a :class:`ScoredPair`, or a DataError naming where the row is."""

    columns: Mapping[str, str]  # role (s1, s2, score) -> column name
    score_range: ScoreRange

    def pair(self, values: Mapping[str, object], path: Path, line: int | None, row: int | None = None) -> ScoredPair:
        where = f"row {row}: " if row is not None else ""
        s1, s2 = (self._sentence(values, role, path, line, where) for role in ("s1", "s2"))
        return ScoredPair(s1, s2, self._score(values.get(self.columns["score"]), path, line, where))

    def _sentence(self, values: Mapping[str, object], role: str, path: Path, line: int | None, where: str) -> str:
        column = self.columns[role]
        value = values.get(column)
        if value is not None and not isinstance(value, str):
            raise DataError(f"{where}column {column!r} holds {value!r}, not a sentence", file=path, line=line)
        text = (value or "").strip()
        if not text:
            raise DataError(f"{where}column {column!r} is an empty sentence", file=path, line=line)
        return text

    def _score(self, value: object, path: Path, line: int | None, where: str) -> float:
        column = self.columns["score"]
        number: float | None = None
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number):
            raise DataError(f"{where}score {value!r} (column {column!r}) is not a number", file=path, line=line)
        if not self.score_range.low <= number <= self.score_range.high:
            raise DataError(f"{where}score {number:g} (column {column!r}) is outside the range {self.score_range} "
                            "(--score-range)", file=path, line=line)
        return number


def _header(path: Path, header: Sequence[str], reader: RowReader, line: int) -> list[str]:
    names = [name.strip() for name in header]
    missing = [c for c in reader.columns.values() if c not in names]
    if missing:
        raise DataError(f"header lacks column(s) {', '.join(missing)} (found: {', '.join(names)}); name yours with "
                        "--columns", file=path, line=line)
    return names


def _delimited_rows(path: Path, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of each non-blank row: CSV through :mod:`csv` (quotes may hold commas and newlines, the
    line is the row's first), TSV split at every tab."""
    if delimiter == "\t":
        for number, line in enumerate(iter_file_lines(path), start=1):
            if line.strip():
                yield number, line.split("\t")
        return
    rows = csv.reader(line + "\n" for line in iter_file_lines(path))
    start = 1
    try:
        for fields in rows:
            if len(fields) > 1 or "".join(fields).strip():
                yield start, fields
            start = rows.line_num + 1
    except csv.Error as exc:
        raise DataError(f"not CSV: {exc}", file=path, line=start) from None


def read_delimited(path: Path, delimiter: str, reader: RowReader) -> Iterator[ScoredPair]:
    """A CSV (``delimiter`` ``,``) or TSV (``\\t``) file with a header line."""
    rows = _delimited_rows(path, delimiter)
    first = next(rows, None)
    if first is None:
        raise DataError("empty file: expected a header line naming the columns", file=path, line=1)
    names = _header(path, first[1], reader, first[0])
    for number, fields in rows:
        if len(fields) != len(names):
            raise DataError(f"expected {len(names)} columns (as the header), found {len(fields)}", file=path,
                            line=number)
        yield reader.pair(dict(zip(names, fields, strict=True)), path, number)


def read_jsonl(path: Path, reader: RowReader) -> Iterator[ScoredPair]:
    """A JSON-lines file: each non-blank line one object holding the columns."""
    for number, line in enumerate(iter_file_lines(path), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise DataError(f"not JSON: {exc}", file=path, line=number) from None
        if not isinstance(value, dict):
            raise DataError(f"expected a JSON object, found {type(value).__name__}", file=path, line=number)
        missing = [c for c in reader.columns.values() if c not in value]
        if missing:
            raise DataError(f"object lacks {', '.join(missing)} (has: {', '.join(value)}); name yours with "
                            "--columns", file=path, line=number)
        yield reader.pair(value, path, number)


def read_parquet(paths: Sequence[Path], reader: RowReader) -> Iterator[ScoredPair]:
    """Parquet files (the hub's conversion, ``<subset>/<split>/NNNN.parquet``); a bad row is named by its file
    and its 1-based row."""
    columns = list(dict.fromkeys(reader.columns.values()))
    rows: dict[Path, int] = {}
    for path, batch in parquet_batches(paths, columns):
        for values in zip(*(batch[c] for c in columns), strict=True):
            rows[path] = rows.get(path, 0) + 1
            yield reader.pair(dict(zip(columns, values, strict=True)), path, None, rows[path])


def stream_scored_pairs(paths: Iterable[Path], fmt: str, columns: Mapping[str, str],
                        score_range: ScoreRange) -> Iterator[ScoredPair]:
    """The pairs of ``paths`` read as ``fmt`` (csv, tsv, jsonl, parquet-scored), each checked."""
    reader = RowReader(columns, score_range)
    files = list(paths)
    if fmt == "parquet-scored":
        yield from read_parquet(files, reader)
        return
    for path in files:
        if fmt == "jsonl":
            yield from read_jsonl(path, reader)
        else:
            yield from read_delimited(path, "," if fmt == "csv" else "\t", reader)
