"""The sweep's winner as people see it: its label, its registered version's description and tags, and, for a
sweep with ``reference``, a side-by-side summary of the paper, our run of its setting, and the tuned winner."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sentsweep.platform.outcome import interval
from sentsweep.platform.results import FIGURE_SUFFIXES, creation_numbers, is_reference, result_trial_id
from sentsweep.tracking.names import CONFIRMATION_PREFIX, SEARCH_PREFIX, figure, trial_label, ui_link
from sentsweep.tracking.vocabulary import REFERENCE_TRIAL_TAG, TRIAL_ID_TAG

if TYPE_CHECKING:
    from ray.tune import Result

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.outcome import SweepOutcome

#: The sweep run's tag naming its best trial by label (``sentsweep.best_trial_id`` keeps Tune's id).
BEST_LABEL_TAG = "sentsweep.best_trial"


class SweepRunWrites(Protocol):
    def set_tags(self, tags: dict[str, str]) -> None: ...

    def log_artifacts(self, local_dir: str | Path, artifact_path: str) -> None: ...


def result_label(results: Iterable[Result] | None, trial_id: str, prefix: str = SEARCH_PREFIX) -> str:
    """The label of trial ``trial_id`` among ``results`` by the order Tune created them (Tune's id when it is not
    there)."""
    numbers = creation_numbers([r.metrics for r in results or [] if (r.metrics or {}).get("trial_id")])
    return trial_label(numbers.get(trial_id), prefix) or trial_id


def best_label(outcome: SweepOutcome) -> str:
    """A search trial's ``t03``, or a confirmation seed's ``c02 (a further seed of t03)``."""
    trial_id = outcome.best_trial_id or ""
    stage = outcome.confirmation
    if stage is None or stage.chosen.original:
        return result_label(outcome.results, trial_id)
    seed = result_label(stage.results, trial_id, CONFIRMATION_PREFIX)
    return f"{seed} (a further seed of {result_label(outcome.results, stage.winner.trial_id)})"


def best_figures(outcome: SweepOutcome, config: SweepConfig) -> dict[str, float]:
    figures: dict[str, float] = {f"dev_{config.metric}": outcome.best_value} if outcome.best_value is not None else {}
    figures.update({f"test_{k}": v for k, v in (outcome.final_metrics or {}).items()
                    if k.endswith(FIGURE_SUFFIXES) and math.isfinite(v)})
    if outcome.confirmation is not None:
        summary = outcome.confirmation.winner.interval
        if summary.n:
            figures.update({f"confirmed_{config.metric}_{k}": float(getattr(summary, k))
                            for k in ("mean", "low", "high", "n") if math.isfinite(float(getattr(summary, k)))})
    return figures


def model_version_tags(trial: str, trial_id: str, values: Mapping[str, Any], figures: Mapping[str, float],
                       sweep_name: str, trial_run_id: str | None) -> dict[str, str]:
    tags = {"trial": trial, TRIAL_ID_TAG: trial_id, "sweep": sweep_name,
            **{f"param.{k}": figure(v) for k, v in values.items()},
            **{k: figure(float(v)) for k, v in figures.items()}}
    if trial_run_id:
        tags["trial_run_id"] = trial_run_id
    return {k: str(v)[:5000] for k, v in tags.items()}


def model_version_description(trial: str, values: Mapping[str, Any], figures: Mapping[str, float],
                              sweep_name: str, trial_link: str | None) -> str:
    config = ", ".join(f"{k}={figure(v)}" for k, v in values.items()) or "the sweep's defaults"
    shown = "; ".join(f"{k} {figure(float(v))}" for k, v in figures.items())
    where = f"[its run]({trial_link})" if trial_link else "its run"
    return (f"The best trial **{trial}** of sweep `{sweep_name}` ({where}), with {config}.\n\n"
            f"Figures: {shown or 'none recorded'}.\n\n"
            "The model was logged on the sweep's run (`best_model/`); the tags name the trial.")


def version_about(outcome: SweepOutcome, config: SweepConfig, searched: Iterable[str]) -> tuple[str, dict[str, str]]:
    label = best_label(outcome)
    values: dict[str, Any] = {k: outcome.best_config[k] for k in searched if k in (outcome.best_config or {})}
    figures = best_figures(outcome, config)
    run = outcome.best_run_id
    link = ui_link(outcome.tracking_uri, outcome.experiment_id, run) if run else None
    return (model_version_description(label, values, figures, outcome.sweep_name, link),
            model_version_tags(label, outcome.best_trial_id or "", values, figures, outcome.sweep_name, run))


def find_reference(results: Iterable[Result], point: Mapping[str, Any]) -> Result | None:
    matches = [r for r in results if is_reference(r.config, point)]
    return min(matches, key=result_trial_id) if matches else None


def finite_number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _setting(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def winner_cell(outcome: SweepOutcome, key: str | None) -> str:
    """The winner's figure ``key`` (None: the dev metric): the confirmation's interval, else its single value."""
    if outcome.confirmation is not None:
        runs = outcome.confirmation.winner.further_runs
        summary = interval([r.value if key is None else r.metrics.get(key, math.nan) for r in runs])
        if summary.n:
            return summary.describe()
    value = outcome.best_value if key is None else outcome.final_metrics.get(key)
    return f"{_cell(finite_number(value))} (1 run)"


def side_by_side(config: SweepConfig, outcome: SweepOutcome, reference: Result | None,
                 point: Mapping[str, Any]) -> list[str]:
    ref = config.reference
    ref_id = result_trial_id(reference) if reference is not None else None
    ref_metrics = (reference.metrics or {}) if reference is not None else {}
    rule = f"confirmation, {outcome.confirmation.rule}" if outcome.confirmation is not None else "no confirmation"
    lines = [f"paper vs paper setting vs tuned winner ({ref.source or 'paper figures: none given'}):",
             f"  {'figure':<14} {'paper':>8}  {'paper setting (ours)':>22}  tuned winner ({rule})"]
    ours = f"trial {result_label(outcome.results, ref_id)}" if ref_id else "did not run"
    lines.append(f"  {'trial':<14} {'':>8}  {ours:>22}  trial {best_label(outcome)}")
    keys = list(ref.figures) or sorted(k for k, v in ref_metrics.items()  # the paper's, else our test figures
                                       if k.endswith(FIGURE_SUFFIXES) and finite_number(v) is not None
                                       and k != config.metric)
    for key in keys:
        lines.append(f"  {key:<14} {_cell(ref.figures.get(key)):>8}  {_cell(finite_number(ref_metrics.get(key))):>22}  "
                     f"{winner_cell(outcome, key)}")
    lines.append(f"  {config.metric:<14} {'-':>8}  {_cell(finite_number(ref_metrics.get(config.metric))):>22}  "
                 f"{winner_cell(outcome, None)}  (dev: selection)")
    lines.append(f"  what differs: selection on {config.metric} here; the paper's: {ref.selection or 'not given'}; "
                 "the winner was chosen on this dev set, so it is no reproduction")
    changed = {k: (v, outcome.best_config.get(k)) for k, v in point.items() if outcome.best_config.get(k) != v}
    if changed:
        lines.append("  the winner's settings against the paper's: "
                     + ", ".join(f"{k} {_setting(a)} -> {_setting(b)}" for k, (a, b) in changed.items()))
    return lines


def report_reference(config: SweepConfig, outcome: SweepOutcome, sweep: SweepRunWrites | None = None,
                     echo: Callable[[str], None] = print) -> list[str]:
    """Echo the side-by-side lines (none without ``reference``) and put them on the sweep's run; returns them."""
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
