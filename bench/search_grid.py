"""The tabular benchmark's tables: a grid of configurations of one method, each with its recorded dev curve.

One row per (configuration, seed, report): the searched settings (the columns before ``step``: ``scale``, ``lr``,
``pooling``, ``batch_size`` in the CoSENT tables; ``views``, ``hidden_size``, ``lr`` in the multi-view one), an
optional ``seed``, the training ``step`` of the report, the dev value (``stsb_dev``, Spearman x100) and the
``seconds`` the trial had run when it made the report and its CPU seconds (``cpu_seconds``; both cumulative, from the
start of the trial: model and data loading included). Lines that start with ``#`` are the table's provenance
(command, machine, date); a ``# method: NAME`` line names the method (default: CoSENT). A configuration recorded with
several seeds gives the noise: the seed-to-seed standard deviation of the best dev value. Written by
:mod:`bench.search_record`, replayed by :mod:`bench.search_replay` (in the style of the HPOBench / NAS-Bench tables).
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The CoSENT tables' searched settings, in their column order.
PARAMS: tuple[str, ...] = ("scale", "lr", "pooling", "batch_size")
#: The columns after the searched settings (``seed`` is optional and comes first when present).
MEASURED: tuple[str, ...] = ("step", "stsb_dev", "seconds", "cpu_seconds")
SEED = "seed"
#: The cost columns a replay may use.
COSTS: tuple[str, ...] = ("cpu_seconds", "seconds")
#: The table in the repository.
DEFAULT_TABLE = Path(__file__).resolve().parent / "data" / "cosent_grid.csv"
METHOD_LINE = "method: "

Config = tuple[Any, ...]


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
    """The recorded grid: every configuration's curve (its first seed), the grid's values per setting, and the
    curves of further seeds (``replicas``) that measure the noise."""

    curves: dict[Config, Curve]
    params: tuple[str, ...] = PARAMS
    method: str = "cosent"
    replicas: dict[Config, tuple[Curve, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        lengths = {len(c.steps) for c in self.curves.values()}
        if len(lengths) > 1:
            raise ValueError(f"curves of different lengths in the table: {sorted(lengths)}")

    def values(self, name: str) -> list[Any]:
        """The grid's sorted values of setting ``name``."""
        index = self.params.index(name)
        return sorted({c[index] for c in self.curves})

    def named(self, config: Config) -> dict[str, Any]:
        return dict(zip(self.params, config, strict=True))

    @property
    def reports(self) -> int:
        """Reports (dev evaluations) per configuration."""
        return len(next(iter(self.curves.values())).steps)

    @property
    def best(self) -> float:
        """The table's best value: the best dev value any configuration reached."""
        return max(c.best for c in self.curves.values())

    def noise_sd(self) -> float | None:
        """The seed-to-seed standard deviation of a trial's best dev value: the sample variances of the
        configurations recorded with several seeds, pooled (None when no configuration has a second seed)."""
        groups = [[self.curves[k].best, *(c.best for c in extra)] for k, extra in self.replicas.items() if extra]
        if not groups:
            return None
        squares = sum(statistics.variance(g) * (len(g) - 1) for g in groups)
        return math.sqrt(squares / sum(len(g) - 1 for g in groups))

    def restricted(self, name: str, values: Sequence[Any]) -> GridTable:
        """The sub-grid whose setting ``name`` takes one of ``values`` (compared as the table's types)."""
        index = self.params.index(name)
        kind = type(next(iter(self.curves))[index])
        wanted = {kind(v) for v in values}
        keep = {k: c for k, c in self.curves.items() if k[index] in wanted}
        return GridTable(keep, self.params, self.method, {k: v for k, v in self.replicas.items() if k in keep})

    def is_complete(self) -> bool:
        """Whether every combination of the grid's values was recorded."""
        return len(self.curves) == math.prod(len(self.values(p)) for p in self.params)


def table_params(header: Sequence[str]) -> tuple[str, ...]:
    """The searched settings of a table with these columns: every column before ``seed`` or ``step``."""
    end = next(i for i, name in enumerate(header) if name in (SEED, MEASURED[0]))
    return tuple(header[:end])


def _typed(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def config_of(row: dict[str, Any], params: Sequence[str] = PARAMS) -> Config:
    """The configuration a table row (or a trial's settings) names, typed (an int, a float or a string)."""
    return tuple(_typed(str(row[name])) if isinstance(row[name], str) else row[name] for name in params)


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a table file (provenance lines skipped); [] when it does not exist."""
    if not path.exists():
        return []
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


def _header(path: Path) -> list[str]:
    line = next(line for line in path.read_text().splitlines() if line and not line.startswith("#"))
    return next(csv.reader([line]))


def table_method(path: Path) -> str:
    """The method a table's ``# method:`` line names (CoSENT when there is none)."""
    for line in path.read_text().splitlines():
        if line.startswith("# " + METHOD_LINE):
            return line[len("# " + METHOD_LINE):].strip()
    return "cosent"


def read_table(path: Path = DEFAULT_TABLE, cost: str = COSTS[0]) -> GridTable:
    """The table at ``path``, as curves by configuration (each curve sorted by step; ``seconds`` from the ``cost``
    column); a configuration's first seed is its curve, the others its replicas."""
    rows = read_rows(path)
    if not rows:
        raise ValueError(f"{path}: no rows (record it first: python -m bench.search_table record)")
    params = table_params(_header(path))
    grouped: dict[Config, list[dict[str, str]]] = {}
    for row in rows:
        grouped.setdefault(config_of(row, params), []).append(row)
    return table_from_rows(grouped, cost, params, table_method(path))


def _curve(config: Config, rows: list[dict[str, Any]], cost: str) -> Curve:
    rows = sorted(rows, key=lambda r: int(float(r["step"])))
    return Curve(config, tuple(int(float(r["step"])) for r in rows), tuple(float(r["stsb_dev"]) for r in rows),
                 tuple(float(r[cost]) for r in rows))


def table_from_rows(grouped: dict[Config, list[dict[str, Any]]], cost: str = COSTS[0], params: tuple[str, ...] = PARAMS,
                    method: str = "cosent") -> GridTable:
    curves, replicas = {}, {}
    for config, rows in grouped.items():
        by_seed: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_seed.setdefault(str(row.get(SEED) or ""), []).append(row)
        seeds = sorted(by_seed, key=lambda s: (s == "", int(s) if s else 0))
        curves[config] = _curve(config, by_seed[seeds[0]], cost)
        if len(seeds) > 1:
            replicas[config] = tuple(_curve(config, by_seed[s], cost) for s in seeds[1:])
    return GridTable(curves, params, method, replicas)


def recorded_configs(path: Path, seed: int | None = None) -> set[Config]:
    """The configurations the table at ``path`` holds already (with ``seed``, when given and the table has seeds;
    a trial's rows are written together at its end)."""
    rows = read_rows(path)
    if not rows:
        return set()
    params = table_params(_header(path))
    return {config_of(r, params) for r in rows if seed is None or SEED not in r or int(r[SEED]) == seed}


def write_provenance(path: Path, provenance: Sequence[str]) -> None:
    """Replace the table's ``#`` lines with ``provenance`` (a resumed recording says how the whole table was made)."""
    rows = [line for line in path.read_text().splitlines(keepends=True) if not line.startswith("#")]
    path.write_text("".join(f"# {line}\n" for line in provenance) + "".join(rows))


def append_rows(path: Path, rows: Iterable[dict[str, Any]], provenance: Sequence[str] = ()) -> None:
    """Append ``rows`` to the table (created with ``provenance`` as ``#`` lines and the header of the first row's
    columns when new; appended rows follow the existing header)."""
    rows = list(rows)
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(rows[0]) if new and rows else _header(path) if not new else []
    if new:  # the searched settings first, then the seed and the measured columns
        columns = [c for c in columns if c not in (SEED, *MEASURED)] + [c for c in (SEED, *MEASURED) if c in columns]
    with path.open("a", newline="") as handle:
        if new:
            handle.writelines(f"# {line}\n" for line in provenance)
        writer = csv.DictWriter(handle, fieldnames=columns)
        if new:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in columns})
        handle.flush()


def merge_tables(parts: Sequence[Path], out: Path, command: str) -> int:
    """Write the rows of the tables ``parts`` (recorded side by side, e.g. one process per core) into ``out``, with
    every part's ``#`` lines kept under its name; the number of configurations written.

    Refuses parts of different methods, parts whose reports fall at different steps, and a configuration and seed
    recorded in two parts."""
    rows: list[dict[str, str]] = []
    owner: dict[tuple[Config, str], Path] = {}
    steps: dict[Path, list[int]] = {}
    provenance = [f"merged by: {command}"]
    methods: set[str] = set()
    for part in parts:
        part_rows = read_rows(part)
        if not part_rows:
            raise ValueError(f"{part}: no rows")
        params = table_params(_header(part))
        steps[part] = sorted({int(r["step"]) for r in part_rows})
        for key in sorted({(config_of(r, params), r.get(SEED, "")) for r in part_rows}):
            if key in owner:
                seed = f" (seed {key[1]})" if key[1] else ""
                raise ValueError(f"{part}: configuration {key[0]}{seed} is recorded in {owner[key]} too")
            owner[key] = part
        rows += part_rows
        provenance += [f"part {part.name}: {line[1:].strip()}" for line in part.read_text().splitlines()
                       if line.startswith("#") and not line.startswith("# " + METHOD_LINE)]
        methods.add(table_method(part))
    if len(methods) > 1:
        raise ValueError(f"the parts record different methods: {sorted(methods)}")
    method = methods.pop()
    if len({tuple(s) for s in steps.values()}) > 1:
        raise ValueError("the parts report at different steps: " + "; ".join(f"{p}: {s}" for p, s in steps.items()))
    if out.exists():
        raise ValueError(f"{out} exists: merge into a new --table")
    append_rows(out, rows, [*provenance, *([METHOD_LINE + method] if method != "cosent" else [])])
    return len({config for config, _ in owner})
