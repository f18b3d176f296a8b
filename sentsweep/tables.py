"""Plain-text tables for people: GitHub markdown and space-aligned columns (no optional dependency).

Pure Python, importable from any layer: ``platform.compare`` (sweeps and trials), the cluster's job list,
the trainables' diagnostics.

>>> print(markdown_table([("a", 0.123456), ("b|c", float("nan"))], ["name", "value"]))
| name | value |
|---|---|
| a | 0.1235 |
| b\\|c |  |
>>> print(aligned_table([("x", "RUNNING", "python -m x"), ("long-id", "OK", "y")], ["ID", "STATUS", "CMD"]))
ID       STATUS   CMD
x        RUNNING  python -m x
long-id  OK       y
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any


def format_cell(value: Any, float_format: str = ".4g") -> str:
    """One cell: floats with ``float_format`` (NaN empty), None empty, anything else as ``str``."""
    if isinstance(value, float):
        return "" if math.isnan(value) else format(value, float_format)
    return "" if value is None else str(value)


def markdown_table(rows: Iterable[Sequence[Any]], columns: Sequence[str], *, float_format: str = ".4g") -> str:
    """A GitHub markdown table of ``rows`` under ``columns`` (``|`` in a cell escaped)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = (format_cell(value, float_format).replace("|", "\\|") for value in row)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def aligned_table(rows: Iterable[Sequence[Any]], columns: Sequence[str], *, float_format: str = ".4g") -> str:
    """Columns padded to their widest cell and separated by two spaces; the last column is not padded."""
    table = [list(columns)] + [[format_cell(value, float_format) for value in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns) - 1)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  " + row[-1]
                     for row in table)
