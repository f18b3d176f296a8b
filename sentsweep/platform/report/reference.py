"""The paper's figure, our run of the paper's setting and the tuned winner, side by side (a sweep with ``reference``).

A paper config runs the paper's setting as its reference trial (:mod:`sentsweep.platform.search.scheduler`) and then
searches around it. Its tuned winner was selected on this project's dev set, which is not the paper's, so it is no
reproduction. The final summary therefore shows three columns for each figure:

- ``paper``: the paper's figure, from the config's ``reference.figures``;
- ``paper setting (ours)``: the reference trial's final report;
- ``tuned winner``: the confirmation stage's mean and 95% interval over the winner's further seeds, or the best
  trial's final test figures when no confirmation stage ran.

Then what differs: the dev metric each selected on, and the settings the search changed.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stats import interval
from sentsweep.platform.folder.retention import result_trial_id
from sentsweep.platform.report.best_label import best_label, result_label
from sentsweep.platform.results import FIGURE_SUFFIXES, is_reference
from sentsweep.tracking.vocabulary import REFERENCE_TRIAL_TAG

if TYPE_CHECKING:
    from ray.tune import Result

    from sentsweep.platform.driver.outcome import SweepOutcome
    from sentsweep.platform.tracking.parent_run import SweepRun


def find_reference(results: Iterable[Result], point: Mapping[str, Any]) -> Result | None:
    """The first trial (by Tune's trial id) whose settings hold ``point``."""
    matches = [r for r in results if is_reference(r.config, point)]
    return min(matches, key=result_trial_id) if matches else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _setting(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def winner_cell(outcome: SweepOutcome, key: str | None) -> str:
    """The tuned winner's figure ``key`` (None: the sweep's dev metric): the confirmation's interval over its further
    seeds, else the chosen trial's single value."""
    confirmation = outcome.confirmation
    if confirmation is not None:
        runs = confirmation.winner.further_runs
        summary = interval([r.value if key is None else r.metrics.get(key, math.nan) for r in runs])
        if summary.n:
            return summary.describe()
    value = outcome.best_value if key is None else outcome.final_metrics.get(key)
    return f"{_cell(_number(value))} (1 run)"


def figure_keys(config: SweepConfig, reference: Result | None) -> list[str]:
    """The figures to show: the paper's, else the reference trial's test figures."""
    keys = list(config.reference.figures) if config.reference else []
    if not keys and reference is not None:
        keys = sorted(k for k, v in (reference.metrics or {}).items()
                      if k.endswith(FIGURE_SUFFIXES) and _number(v) is not None and k != config.metric)
    return keys


def changed_settings(point: Mapping[str, Any], chosen: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The paper's settings the tuned winner changed: name -> (paper's, winner's)."""
    return {k: (v, chosen.get(k)) for k, v in point.items() if chosen.get(k) != v}


def side_by_side(config: SweepConfig, outcome: SweepOutcome, reference: Result | None,
                 point: Mapping[str, Any]) -> list[str]:
    """The summary's lines: a header, one line per figure and the sweep's metric, then what differs."""
    ref = config.reference
    ref_id = result_trial_id(reference) if reference is not None else None
    ref_metrics = (reference.metrics or {}) if reference is not None else {}
    rule = f"confirmation, {outcome.confirmation.rule}" if outcome.confirmation is not None else "no confirmation"
    lines = [f"paper vs paper setting vs tuned winner ({ref.source or 'paper figures: none given'}):",
             f"  {'figure':<14} {'paper':>8}  {'paper setting (ours)':>22}  tuned winner ({rule})"]
    ours = f"trial {result_label(outcome.results, ref_id)}" if ref_id else "did not run"
    lines.append(f"  {'trial':<14} {'':>8}  {ours:>22}  trial {best_label(outcome)}")
    for key in figure_keys(config, reference):
        paper = ref.figures.get(key)
        lines.append(f"  {key:<14} {_cell(paper):>8}  {_cell(_number(ref_metrics.get(key))):>22}  "
                     f"{winner_cell(outcome, key)}")
    lines.append(f"  {config.metric:<14} {'-':>8}  {_cell(_number(ref_metrics.get(config.metric))):>22}  "
                 f"{winner_cell(outcome, None)}  (dev: selection)")
    lines.append(f"  what differs: selection on {config.metric} here; the paper's: {ref.selection or 'not given'}; "
                 "the winner was chosen on this dev set, so it is no reproduction")
    changed = changed_settings(point, outcome.best_config)
    if changed:
        lines.append("  the winner's settings against the paper's: "
                     + ", ".join(f"{k} {_setting(a)} -> {_setting(b)}" for k, (a, b) in changed.items()))
    return lines


def report_reference(config: SweepConfig, outcome: SweepOutcome, sweep: SweepRun | None = None,
                     echo: Callable[[str], None] = print) -> list[str]:
    """Echo the side-by-side lines of a sweep with ``reference`` (none without it), and put them on the sweep's run
    (``reference/side_by_side.txt``, the reference trial's id as :data:`REFERENCE_TRIAL_TAG`); returns them."""
    point = outcome.reference_point
    if config.reference is None or outcome.results is None or point is None:
        return []
    reference = find_reference(outcome.results, point)
    lines = side_by_side(config, outcome, reference, point)
    for line in lines:
        echo(line)
    if sweep is not None:
        if reference is not None:
            sweep.set_tags({REFERENCE_TRIAL_TAG: result_trial_id(reference)})
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "side_by_side.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
            sweep.log_artifacts(tmp, "reference")
    return lines
