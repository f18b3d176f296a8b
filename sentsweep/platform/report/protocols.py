"""The protocols behind the figures ``sentsweep compare`` puts side by side: a metric measured under several is
refused (:class:`MixedProtocolsError`) unless ``--mixed-protocols`` allows it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from sentsweep.errors import ConfigError
from sentsweep.evaluation.metric_protocols import compact_id
from sentsweep.platform.report.compare import SweepRuns, to_markdown
from sentsweep.tracking.vocabulary import PROTOCOL_TAG_PREFIX, SWEEP_TAG, TRIAL_ID_TAG

#: The protocol id of a figure whose run recorded none (logged before protocols were recorded).
UNRECORDED = "unrecorded"
#: The columns of :func:`protocol_table`, after ``metric``, ``protocol`` and ``runs``: the compact line's parts.
PROTOCOL_PARTS = ("task/split", "aggregation", "classifier", "max length", "pooling", "precision", "data", "eval code",
                  "code")
#: The parts of :data:`PROTOCOL_PARTS` kept for the record, outside the protocol's id (``RECORD_ONLY``).
RECORD_ONLY_PARTS = ("pooling", "code")


class MixedProtocolsError(ConfigError):
    """Figures of one metric measured under different protocols, put side by side without being allowed."""


def comparable(line: str) -> str:
    """What two figures must share: a compact line's parts but the id and :data:`RECORD_ONLY_PARTS`
    (recomputed from the parts, so lines recorded while pooling was in the id compare with later ones)."""
    if line == UNRECORDED:
        return UNRECORDED
    parts = [p.strip() for p in line.split("|")[1:]]
    return " | ".join(part for name, part in zip(PROTOCOL_PARTS, parts, strict=False) if name not in RECORD_ONLY_PARTS)


def _observations(found: Iterable[SweepRuns]) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """metric -> :func:`comparable` key -> (its compact lines, the runs with a figure under it)."""
    runs = [(sweep, run) for sweep, trials, _ in found for run in (sweep, *trials)]
    recorded = {id(run): {k.removeprefix(PROTOCOL_TAG_PREFIX): v for k, v in run.data.tags.items()
                          if k.startswith(PROTOCOL_TAG_PREFIX)} for _, run in runs}
    metrics = {m for lines in recorded.values() for m in lines}
    seen: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    for sweep, run in runs:
        for metric in sorted(metrics & set(run.data.metrics)):
            line = recorded[id(run)].get(metric, UNRECORDED)
            lines, where = seen.setdefault(metric, {}).setdefault(comparable(line), ([], []))
            if line not in lines:
                lines.append(line)
            name, trial = sweep.data.tags.get(SWEEP_TAG, sweep.info.run_id[:8]), run.data.tags.get(TRIAL_ID_TAG)
            where.append(f"{name}/{trial}" if trial and run is not sweep else name)
    return seen


def protocol_table(found: Iterable[SweepRuns], mixed_protocols: bool = False) -> pd.DataFrame:
    """One row per (metric, protocol); :class:`MixedProtocolsError` for several, unless ``mixed_protocols``."""
    seen = _observations(found)
    mixed = {m: ids for m, ids in seen.items() if len(ids) > 1}
    if mixed and not mixed_protocols:
        metric, protocols = next(iter(sorted(mixed.items())))
        first = next(iter(protocols.values()))[0][0]
        shown = "; ".join(f"{compact_id(lines[0])} ({len(where)} run(s), e.g. {where[0]}"
                          f"{': ' + _difference(lines[0], first) if lines[0] != first else ''})"
                          for lines, where in protocols.values())
        more = f" (and {len(mixed) - 1} more metric(s): {', '.join(sorted(mixed)[1:4])})" if len(mixed) > 1 else ""
        raise MixedProtocolsError(f"'{metric}' was measured under {len(protocols)} protocols, not comparable: {shown}"
                                  f"{more}; pass --mixed-protocols to show them side by side anyway",
                                  field="--mixed-protocols")
    rows: list[dict[str, Any]] = []
    for metric, protocols in sorted(seen.items()):
        for lines, where in protocols.values():  # the unrecorded ones: a protocol of no parts
            split = [[p.strip() for p in line.split("|")] for line in lines]
            parts = [", ".join(dict.fromkeys(values)) for values in zip(*split, strict=False)]
            row = {"metric": metric, "protocol": parts[0], "runs": len(where),
                   **dict(zip(PROTOCOL_PARTS, parts[1:], strict=False))}
            if metric in mixed:
                row["mixed"] = ", ".join(where[:5]) + (f" (+{len(where) - 5})" if len(where) > 5 else "")
            rows.append(row)
    return pd.DataFrame(rows, columns=["metric", "protocol", "runs", *PROTOCOL_PARTS, *(["mixed"] if mixed else [])])


def _difference(line: str, other: str) -> str:
    """The parts in which two compact lines differ, as ``part theirs vs this``."""
    if UNRECORDED in (line, other):
        return "no protocol recorded" if line == UNRECORDED else "recorded vs not recorded"
    mine, theirs = ([p.strip() for p in text.split("|")[1:]] for text in (line, other))
    changed = [f"{b} vs {a}" if b.replace("_", " ").startswith(name) else f"{name} {b} vs {a}"
               for name, a, b in zip(PROTOCOL_PARTS, mine, theirs, strict=False)
               if a != b and name not in RECORD_ONLY_PARTS]
    return ", ".join(changed[:3])


#: The parts that tell one figure's task apart from another's under one protocol (folded by :func:`fold_protocols`).
PER_TASK_PARTS = ("task/split", "data")
SHOWN_METRICS = 4


def fold_protocols(table: pd.DataFrame) -> pd.DataFrame:
    """One row per protocol: :func:`protocol_table` rows that differ only in their task folded into one."""
    if table.empty:
        return table
    key = [c for c in table.columns if c not in ("metric", "protocol", "runs", "mixed", *PER_TASK_PARTS)]
    rows = []
    for values, group in table.fillna("").groupby(key, sort=False):
        row = {"metrics": len(group), "figures": int(group["runs"].sum()), "examples": _first(group["metric"]),
               "ids": _first(group["protocol"]), **dict(zip(key, values, strict=True))}
        if "mixed" in group.columns and group["mixed"].astype(bool).any():
            row["mixed"] = "; ".join(m for m in group["mixed"] if m)
        rows.append(row)
    return pd.DataFrame(rows)


def _first(values: Iterable[str]) -> str:
    names = list(dict.fromkeys(values))
    more = len(names) - SHOWN_METRICS
    return ", ".join(names[:SHOWN_METRICS]) + (f" (+{more})" if more > 0 else "")


def render_protocols(table: pd.DataFrame) -> str:
    note = ("\n\nSeveral protocols for one metric (--mixed-protocols): its figures are not comparable."
            if "mixed" in table.columns else "")
    return ("## Protocols\n\nEach protocol the figures above were measured under, with the metrics it covers "
            f"(one task and data file each).\n\n{to_markdown(fold_protocols(table))}{note}\n")
