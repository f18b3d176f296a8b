"""The confirmation stage's figures: its metrics and tags on the stage's and the sweep's MLflow runs, its tables
(``summary.csv``, ``seeds.csv``) and its intervals plot, and the lines the user reads."""

from __future__ import annotations

import csv
import json
import logging
import math
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stage import CONFIRM_RANK_TAG, CONFIRMS_TAG, SEARCH_BEST_TAG, STAGE_DIR, ranked_by_rule
from sentsweep.platform.outcome import ConfirmationOutcome
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.tracking.names import CONFIRMATION_PREFIX, trial_label
from sentsweep.tracking.vocabulary import CHANGED_TAG

log = logging.getLogger("sentsweep.platform")


def search_labels(results: Iterable[Any] | None) -> dict[str, str]:
    """Each search trial's label (``t03``) by its Tune id, numbered as Tune lists the trials (as ``ResultGrid`` keeps
    them)."""
    labels = {}
    for number, result in enumerate(results or [], 1):
        trial_id = str((result.metrics or {}).get("trial_id", ""))
        if trial_id:
            labels[trial_id] = trial_label(number) or trial_id
    return labels


def record(outcome: ConfirmationOutcome, config: SweepConfig, sweep: SweepRun, run: SweepRun,
           echo: Callable[[str], None] = print, labels: dict[str, str] | None = None) -> None:
    """The figures on the confirmation run (per rank) and on the sweep's run (the winner's): the further seeds',
    the search's run apart (``r<rank>_search``); the seeds' table, a line per configuration, each naming its search
    trial by its label (``labels``: Tune's id when it has none)."""
    metric = config.metric
    labels = labels or {}
    per_rank: dict[str, float] = {}
    for c in outcome.candidates:
        iv = c.interval
        per_rank.update({f"r{c.rank}_mean": iv.mean, f"r{c.rank}_std": iv.std, f"r{c.rank}_low": iv.low,
                         f"r{c.rank}_high": iv.high, f"r{c.rank}_n": float(iv.n),
                         f"r{c.rank}_search": c.search_value})
        named = labels.get(c.trial_id, c.trial_id) + (", " + _describe(c.params) if c.params else "")
        echo(f"  #{c.rank} (trial {named}): {metric} "
             f"{iv.describe()}, search run {c.search_value:.2f}{'  <- winner' if c is outcome.winner else ''}")
    run.log_metrics(_finite(per_rank))
    run.set_tags({f"sentsweep.confirm.r{c.rank}_trial": c.trial_id for c in outcome.candidates}
                 | {"sentsweep.confirm.rule": outcome.rule, "sentsweep.confirm.winner_rank": str(outcome.winner.rank),
                    "sentsweep.confirm.chosen_trial": outcome.chosen.trial_id})
    iv = outcome.winner.interval
    winner_figures = {f"confirmed_{metric}_mean": iv.mean, f"confirmed_{metric}_std": iv.std,
                      f"confirmed_{metric}_low": iv.low, f"confirmed_{metric}_high": iv.high,
                      "confirmed_seeds": float(iv.n)}
    further = [r for r in outcome.winner.further_runs if math.isfinite(r.value)]
    for key in sorted(set.intersection(*(set(r.metrics) for r in further)) - {metric} if further else ()):
        values = [r.metrics[key] for r in further if math.isfinite(r.metrics[key])]
        if values:
            winner_figures[f"confirmed_{key}_mean"] = sum(values) / len(values)
    sweep.log_metrics(_finite(winner_figures))
    sweep.set_tags({SEARCH_BEST_TAG: outcome.candidates[0].trial_id, CHANGED_TAG: str(outcome.changed).lower()})
    _tag_stage_runs(outcome, run)
    with tempfile.TemporaryDirectory() as tmp:
        write_tables(outcome, config, Path(tmp))
        if config.plots:
            _plot_intervals(outcome, config, Path(tmp))
        run.log_artifacts(tmp, STAGE_DIR)  # kept in the stage's folder, uploaded in the background
        sweep.log_artifacts(tmp, STAGE_DIR)
    order = ", ".join(f"#{c.rank}" for c in ranked_by_rule(outcome.candidates, outcome.rule, config.mode))
    echo(f"confirmed winner: #{outcome.winner.rank} by its {outcome.rule.replace('_', ' ')} (order {order}; "
         + ("changed from the single-seed ranking" if outcome.changed else "the single-seed best held")
         + f"); its weights: trial {_chosen_label(outcome)}, seed {outcome.chosen.seed} "
         f"({metric} {outcome.chosen.value:.2f}, closest to the mean)")


def _chosen_label(outcome: ConfirmationOutcome) -> str:
    """The chosen seed's label among the confirmation trials (``c01``), or its id (a search trial's run)."""
    ids = [str((r.metrics or {}).get("trial_id")) for r in outcome.results or []]
    if outcome.chosen.original or outcome.chosen.trial_id not in ids:
        return outcome.chosen.trial_id
    return trial_label(ids.index(outcome.chosen.trial_id) + 1, CONFIRMATION_PREFIX) or outcome.chosen.trial_id


def _tag_stage_runs(outcome: ConfirmationOutcome, run: SweepRun) -> None:
    """Each confirmation trial's run tagged with the candidate it confirms (in the background)."""
    for candidate in outcome.candidates:
        for seed_run in candidate.further_runs:
            tags = {CONFIRMS_TAG: candidate.trial_id, CONFIRM_RANK_TAG: str(candidate.rank)}
            run.tag_trial(seed_run.trial_id, tags)


def write_tables(outcome: ConfirmationOutcome, config: SweepConfig, folder: Path) -> list[Path]:
    """``summary.csv`` (one row per configuration: the further seeds' figures, the search's value apart) and
    ``seeds.csv`` (one row per seed, every figure; the search's run marked ``original`` 1)."""
    summary, seeds = folder / "summary.csv", folder / "seeds.csv"
    with summary.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["rank", "trial", "params", "n", "mean", "std", "low", "high", "search_value", "winner",
                         "chosen_trial"])
        for c in outcome.candidates:
            iv = c.interval
            writer.writerow([c.rank, c.trial_id, json.dumps(c.params, default=str), iv.n, iv.mean, iv.std, iv.low,
                             iv.high, c.search_value, int(c is outcome.winner),
                             outcome.chosen.trial_id if c is outcome.winner else ""])
    keys = sorted({k for c in outcome.candidates for r in c.runs for k in r.metrics})
    with seeds.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["rank", "trial", "seed", "original", config.metric, *[k for k in keys if k != config.metric]])
        for c in outcome.candidates:
            for r in c.runs:
                writer.writerow([c.rank, r.trial_id, r.seed, int(r.original), r.value,
                                 *[r.metrics.get(k, "") for k in keys if k != config.metric]])
    return [summary, seeds]


def _plot_intervals(outcome: ConfirmationOutcome, config: SweepConfig, folder: Path) -> None:
    """``intervals.png`` (and its CSV) beside the tables; a plot that fails is a warning, never a failed stage."""
    from sentsweep.platform.report.selection import confirmation_plot

    try:
        confirmation_plot(outcome.candidates, outcome.winner, outcome.rule, config.metric, folder)
    except Exception as exc:  # noqa: BLE001 - best effort, as the sweep's other plots
        log.warning("no confirmation plot: %s: %s", type(exc).__name__, exc)


def _finite(metrics: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}


def _describe(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
