"""The one result type every evaluator returns: flat metrics plus a per-task table."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass
class EvalResult:
    """Flat metrics (x100, stable keys such as ``stsb_test`` or ``mr_acc``) and a table for humans.

    ``metrics`` is what a trainable reports and MLflow logs; ``table`` has one row per task (and, for
    STS12-16, per subset) with the counts behind each figure and a ``note`` for skipped tasks.
    ``info`` holds provenance (data root, whether the bundled sample was used, classifier settings).
    """

    metrics: dict[str, float] = field(default_factory=dict)
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    info: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> float:
        """The metric ``key``."""
        return self.metrics[key]

    def merge(self, other: EvalResult) -> EvalResult:
        """A new result with both sets of metrics and table rows (``other`` wins on a repeated key)."""
        tables = [t for t in (self.table, other.table) if not t.empty]
        if not tables:
            table = pd.DataFrame()
        elif len(tables) == 1:
            table = tables[0].copy()
        else:
            table = pd.concat(tables, ignore_index=True, sort=False)
        return EvalResult({**self.metrics, **other.metrics}, table, {**self.info, **other.info})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-safe data: NaN becomes None."""
        return {
            "metrics": {k: _json_float(v) for k, v in self.metrics.items()},
            "table": _json_safe(self.table.to_dict(orient="records")),
            "info": _json_safe(self.info),
        }

    def to_json(self, path: str | Path | None = None, indent: int = 2) -> str:
        """Serialise to JSON (strict: no NaN); also write it to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, text_or_path: str | Path) -> EvalResult:
        """Read back what :meth:`to_json` wrote (a JSON string or a path to a file)."""
        text = str(text_or_path)
        if not text.lstrip().startswith("{"):
            text = Path(text_or_path).read_text(encoding="utf-8")
        data = json.loads(text)
        metrics = {k: (math.nan if v is None else float(v)) for k, v in data.get("metrics", {}).items()}
        return cls(metrics, pd.DataFrame.from_records(data.get("table", [])), dict(data.get("info", {})))

    def to_csv(self, path: str | Path | None = None) -> str:
        """The table as CSV text; also written to ``path`` when given."""
        text = self.table.to_csv(index=False)
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def __str__(self) -> str:
        """The table, aligned, followed by the metrics."""
        lines = [self.table.to_string(index=False)] if not self.table.empty else []
        lines += [f"{k}: {v:.2f}" for k, v in self.metrics.items()]
        return "\n".join(lines)


def _json_float(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float):
        return _json_float(value)
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, str | int | bool) or value is None:
        return value
    if hasattr(value, "item"):  # numpy scalar
        return _json_safe(value.item())
    return str(value)
