"""Reading the text files every loader shares: robust decoding, columns, scores, labels.

Each helper raises :class:`~sentsweep.errors.DataError` naming the file and the 1-based line, so a
malformed row anywhere points the user at the exact place to look.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from sentsweep.data.source import missing_data_error
from sentsweep.errors import DataError

_BOM = b"\xef\xbb\xbf"


def _decode(raw: bytes) -> str:
    """UTF-8 where it decodes; otherwise Latin-1, which never fails (old SentEval files are mixed)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def read_lines(path: Path) -> list[str]:
    """The file's lines without their line ends, decoded line by line (UTF-8, else Latin-1).

    Lines end at ``\\n`` only (a trailing ``\\r`` is dropped, so CRLF files read like LF files); a byte
    order mark is dropped; the empty string after a final newline is not a line, so the result has as
    many entries as ``wc -l`` counts for a file that ends in a newline.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise missing_data_error(path) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror}", file=path) from exc
    raw = raw.removeprefix(_BOM)
    try:
        lines = raw.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        lines = [_decode(chunk) for chunk in raw.split(b"\n")]
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def decode_lines(raw_lines: Iterable[bytes]) -> Iterator[str]:
    """Binary lines (with or without their ``\\n``) as text, by the rules of :func:`read_lines`, one at a time."""
    for number, raw in enumerate(raw_lines):
        line = raw.removeprefix(_BOM) if number == 0 else raw
        yield _decode(line.removesuffix(b"\n")).removesuffix("\r")


def iter_file_lines(path: Path) -> Iterator[str]:
    """The lines of a file of any size as :func:`read_lines` gives them, streamed (never the whole file)."""
    try:
        with path.open("rb") as handle:
            yield from decode_lines(handle)
    except FileNotFoundError:
        raise missing_data_error(path) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror}", file=path) from exc


def numbered(lines: Sequence[str], *, start: int = 1, skip_blank: bool = False) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` pairs, 1-based by default; blank lines dropped when asked."""
    for number, line in enumerate(lines, start=start):
        if skip_blank and not line.strip():
            continue
        yield number, line


def split_columns(
    line: str, path: Path, number: int, *, exactly: int | None = None, at_least: int | None = None
) -> list[str]:
    """Split a tab-separated line, checking the column count (exact, or a minimum)."""
    fields = line.split("\t")
    if exactly is not None and len(fields) != exactly:
        raise DataError(
            f"expected {exactly} tab-separated columns, found {len(fields)}", file=path, line=number
        )
    if at_least is not None and len(fields) < at_least:
        raise DataError(
            f"expected at least {at_least} tab-separated columns, found {len(fields)}", file=path, line=number
        )
    return fields


def parse_score(text: str, path: Path, number: int, *, what: str = "score") -> float:
    """A finite float, or a DataError naming the file, line and offending text."""
    try:
        value = float(text.strip())
    except ValueError:
        raise DataError(f"cannot parse {what} {text.strip()!r} as a number", file=path, line=number) from None
    if not math.isfinite(value):
        raise DataError(f"{what} {text.strip()!r} is not a finite number", file=path, line=number)
    return value


def label_index(names: Sequence[str]) -> dict[str, int]:
    """Map each label name (case-folded) to its position in ``names``."""
    return {name.casefold(): index for index, name in enumerate(names)}


#: The labels of binary tasks written as digits (MRPC's Quality, SST's label).
BINARY_LABELS: dict[str, int] = label_index(("0", "1"))


def parse_label(text: str, labels: Mapping[str, int], path: Path, number: int, *, what: str = "label") -> int:
    """Look a label up case-insensitively in ``labels`` (keys case-folded, see :func:`label_index`)."""
    key = text.strip().casefold()
    if key not in labels:
        known = ", ".join(sorted(labels))
        raise DataError(f"unknown {what} {text.strip()!r} (expected one of: {known})", file=path, line=number)
    return labels[key]


def read_table(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Rows of a tab-separated file with a header line, as ``(line_number, {column: value})``.

    Blank lines are skipped; every other row must have as many columns as the header, and the header
    must name every column in ``required``.
    """
    lines = read_lines(path)
    if not lines:
        raise DataError("empty file: expected a tab-separated header line", file=path, line=1)
    header = [name.strip() for name in lines[0].split("\t")]
    missing = [name for name in required if name not in header]
    if missing:
        raise DataError(
            f"header lacks column(s) {', '.join(map(repr, missing))} (found: {', '.join(map(repr, header))})",
            file=path,
            line=1,
        )
    for number, line in numbered(lines[1:], start=2, skip_blank=True):
        fields = split_columns(line, path, number, exactly=len(header))
        yield number, dict(zip(header, fields, strict=True))


def read_aligned(paths: Sequence[Path]) -> list[tuple[str, ...]]:
    """Line-aligned files read side by side: row i holds line i of each file.

    Files of different lengths are an error naming the shorter file and the first line it lacks.
    """
    columns = [read_lines(path) for path in paths]
    lengths = [len(lines) for lines in columns]
    if len(set(lengths)) > 1:
        shortest = min(range(len(paths)), key=lengths.__getitem__)
        longest = max(range(len(paths)), key=lengths.__getitem__)
        raise DataError(
            f"has {lengths[shortest]} lines but {paths[longest].name} has {lengths[longest]}; "
            "the files must be line-aligned",
            file=paths[shortest],
            line=lengths[shortest] + 1,
        )
    return list(zip(*columns, strict=True))
