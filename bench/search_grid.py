"""The tabular benchmark's table: a grid of CoSENT configurations, each with its recorded dev curve.

One row per (configuration, report): the four searched settings (``scale``, ``lr``, ``pooling``, ``batch_size``),
the training ``step`` of the report, the dev value (``stsb_dev``, Spearman x100) and the ``seconds`` the trial had
run when it made the report and its CPU seconds (``cpu_seconds``; both cumulative, from the start of the trial: model
and data loading included). Lines that
start with ``#`` are the table's provenance (command, machine, date). Written by :mod:`bench.search_record`,
replayed by :mod:`bench.search_replay` (in the style of the HPOBench / NAS-Bench tables).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The searched settings, in the table's column order.
PARAMS: tuple[str, ...] = ("scale", "lr", "pooling", "batch_size")
COLUMNS: tuple[str, ...] = (*PARAMS, "step", "stsb_dev", "seconds", "cpu_seconds")
#: The cost columns a replay may use.
COSTS: tuple[str, ...] = ("cpu_seconds", "seconds")
#: The table in the repository.
DEFAULT_TABLE = Path(__file__).resolve().parent / "data" / "cosent_grid.csv"

Config = tuple[float, float, str, int]


@dataclass(frozen=True)
class Curve:
    """One configuration's recorded dev curve: ``values[i]`` at ``steps[i]``, reached after ``seconds[i]``."""

    config: Config
    steps: tuple[int, ...]
    values: tuple[float, ...]
    seconds: tuple[float, ...]

    @property
    def final(self) -> float:
        return self.values[-1]

    @property
    def best(self) -> float:
        """The best dev value along the curve (what the loop keeps as the trial's result)."""
        return max(self.values)


@dataclass(frozen=True)
class GridTable:
    """The recorded grid: every configuration's curve, and the grid's values per setting."""

    curves: dict[Config, Curve]

    def __post_init__(self) -> None:
        lengths = {len(c.steps) for c in self.curves.values()}
        if len(lengths) > 1:
            raise ValueError(f"curves of different lengths in the table: {sorted(lengths)}")

    def values(self, name: str) -> list[Any]:
        """The grid's sorted values of setting ``name``."""
        index = PARAMS.index(name)
        return sorted({c[index] for c in self.curves})

    @property
    def reports(self) -> int:
        """Reports (dev evaluations) per configuration."""
        return len(next(iter(self.curves.values())).steps)

    @property
    def best(self) -> float:
        """The table's best value: the best dev value any configuration reached."""
        return max(c.best for c in self.curves.values())

    def restricted(self, name: str, values: Sequence[Any]) -> GridTable:
        """The sub-grid whose setting ``name`` takes one of ``values`` (compared as the table's types)."""
        index = PARAMS.index(name)
        kind = type(next(iter(self.curves))[index])
        wanted = {kind(v) for v in values}
        return GridTable({k: c for k, c in self.curves.items() if k[index] in wanted})

    def is_complete(self) -> bool:
        """Whether every combination of the grid's values was recorded."""
        return len(self.curves) == math.prod(len(self.values(p)) for p in PARAMS)


def config_of(row: dict[str, Any]) -> Config:
    """The configuration a table row (or a trial's settings) names, typed."""
    return (float(row["scale"]), float(row["lr"]), str(row["pooling"]), int(row["batch_size"]))


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a table file (provenance lines skipped); [] when it does not exist."""
    if not path.exists():
        return []
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


def read_table(path: Path = DEFAULT_TABLE, cost: str = COSTS[0]) -> GridTable:
    """The table at ``path``, as curves by configuration (each curve sorted by step; ``seconds`` from the ``cost``
    column)."""
    rows = read_rows(path)
    if not rows:
        raise ValueError(f"{path}: no rows (record it first: python -m bench.search_table record)")
    grouped: dict[Config, list[dict[str, str]]] = {}
    for row in rows:
        grouped.setdefault(config_of(row), []).append(row)
    return table_from_rows(grouped, cost)


def table_from_rows(grouped: dict[Config, list[dict[str, Any]]], cost: str = COSTS[0]) -> GridTable:
    curves = {}
    for config, rows in grouped.items():
        rows = sorted(rows, key=lambda r: int(float(r["step"])))
        curves[config] = Curve(config, tuple(int(float(r["step"])) for r in rows),
                               tuple(float(r["stsb_dev"]) for r in rows), tuple(float(r[cost]) for r in rows))
    return GridTable(curves)


def recorded_configs(path: Path) -> set[Config]:
    """The configurations the table at ``path`` holds already (a trial's rows are written together at its end)."""
    return {config_of(row) for row in read_rows(path)}


def write_provenance(path: Path, provenance: Sequence[str]) -> None:
    """Replace the table's ``#`` lines with ``provenance`` (a resumed recording says how the whole table was made)."""
    rows = [line for line in path.read_text().splitlines(keepends=True) if not line.startswith("#")]
    path.write_text("".join(f"# {line}\n" for line in provenance) + "".join(rows))


def append_rows(path: Path, rows: Iterable[dict[str, Any]], provenance: Sequence[str] = ()) -> None:
    """Append ``rows`` to the table (created with ``provenance`` as ``#`` lines and the header when new)."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", newline="") as handle:
        if new:
            handle.writelines(f"# {line}\n" for line in provenance)
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        if new:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in COLUMNS})
        handle.flush()


def merge_tables(parts: Sequence[Path], out: Path, command: str) -> int:
    """Write the rows of the tables ``parts`` (recorded side by side, e.g. one process per core) into ``out``, with
    every part's ``#`` lines kept under its name; the number of configurations written.

    Refuses parts whose reports fall at different steps, and a configuration recorded in two parts."""
    rows: list[dict[str, str]] = []
    owner: dict[Config, Path] = {}
    steps: dict[Path, list[int]] = {}
    provenance = [f"merged by: {command}"]
    for part in parts:
        part_rows = read_rows(part)
        if not part_rows:
            raise ValueError(f"{part}: no rows")
        steps[part] = sorted({int(r["step"]) for r in part_rows})
        for config in sorted({config_of(r) for r in part_rows}):
            if config in owner:
                raise ValueError(f"{part}: configuration {config} is recorded in {owner[config]} too")
            owner[config] = part
        rows += part_rows
        provenance += [f"part {part.name}: {line[1:].strip()}" for line in part.read_text().splitlines()
                       if line.startswith("#")]
    if len({tuple(s) for s in steps.values()}) > 1:
        raise ValueError("the parts report at different steps: " + "; ".join(f"{p}: {s}" for p, s in steps.items()))
    if out.exists():
        raise ValueError(f"{out} exists: merge into a new --table")
    append_rows(out, rows, provenance)
    return len(owner)
