"""How a sweep's winner is selected and drawn: a multi-objective sweep's Pareto front (tags, plot and CSV on the
parent run) and the confirmation stage's intervals plot."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.platform.objectives import objective_values, pareto_front, select_report
from sentsweep.platform.report.plots import pyplot, save_plot, trial_status
from sentsweep.platform.results import is_draining, is_final
from sentsweep.tracking.vocabulary import OBJECTIVES_TAG, PARETO_ARTIFACTS, PARETO_NAME, PARETO_TAG

if TYPE_CHECKING:
    from ray.tune import ResultGrid

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.objectives import Objective
    from sentsweep.platform.outcome import Candidate
    from sentsweep.platform.report.winner import SweepRunWrites

#: A finished trial: its id, final result, searched params and selected report (None: the final result has all).
FinishedTrial = tuple[str, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any] | None]


def front_rows(trials: Sequence[FinishedTrial], objectives: Sequence[Objective]) -> list[dict[str, Any]]:
    """One row per trial whose objectives are all finite, with ``on_front``; the front first, best first."""
    rows = []
    for trial_id, result, params, selected in trials:
        values = objective_values(result, objectives, selected)
        if all(v is not None and math.isfinite(v) for v in values):
            rows.append({"trial_id": trial_id, **{o.metric: v for o, v in zip(objectives, values, strict=True)},
                         "on_front": 0, **params})
    for i in pareto_front([[row[o.metric] for o in objectives] for row in rows], [o.mode for o in objectives]):
        rows[i]["on_front"] = 1
    sign = -1.0 if objectives[0].mode == "max" else 1.0
    rows.sort(key=lambda r: (-r["on_front"], sign * r[objectives[0].metric], r["trial_id"]))
    return rows


def finished_trials(results: ResultGrid, searched: Sequence[str], first: Objective) -> list[FinishedTrial]:
    finished: list[FinishedTrial] = []
    for result in results:
        metrics = dict(result.metrics or {})
        if trial_status(metrics, bool(result.error)) != "finished":
            continue
        selected = None
        frame = result.metrics_dataframe
        for report in frame.to_dict("records") if frame is not None else []:
            if not is_final(report) and not is_draining(report):  # the reports the searcher selects from
                selected = select_report(selected, report, first)
        config = result.config or {}
        finished.append((str(metrics.get("trial_id", "?")), metrics, {k: config[k] for k in searched if k in config},
                         selected))
    return finished


def record_front(results: ResultGrid, config: SweepConfig, sweep: SweepRunWrites, searched: Sequence[str],
                 echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    objectives = config.objective_list
    if not objectives:
        return []
    rows = front_rows(finished_trials(results, searched, objectives[0]), objectives)
    front = [r for r in rows if r["on_front"]]
    sweep.set_tags({PARETO_TAG: ",".join(r["trial_id"] for r in front),
                    OBJECTIVES_TAG: "; ".join(str(o) for o in objectives)})
    with tempfile.TemporaryDirectory() as tmp:
        pareto_plot(rows, objectives, Path(tmp), PARETO_NAME)
        sweep.log_artifacts(tmp, PARETO_ARTIFACTS)
    echo(f"Pareto front ({' vs '.join(str(o) for o in objectives)}): {len(front)} of {len(rows)} finished trials: "
         + ", ".join(r["trial_id"] + " (" + ", ".join(f"{r[o.metric]:.4g}" for o in objectives) + ")" for r in front))
    return rows


def pareto_plot(rows: Sequence[Mapping[str, Any]], objectives: Sequence[Objective], out_dir: Path,
                name: str = "pareto_front") -> list[Path]:
    """The finished trials on the second objective (x) against the first (y), the front labelled."""
    plt = pyplot()
    first, second = objectives[0], objectives[1]
    front = sorted((r for r in rows if r.get("on_front")), key=lambda r: r[second.metric])
    rest = [r for r in rows if not r.get("on_front")]
    with plt.style.context("default"):  # Optuna's plots switch the global style to ggplot
        figure, ax = plt.subplots(figsize=(8, 5.5))
        ax.scatter([r[second.metric] for r in rest], [r[first.metric] for r in rest], s=28, color="tab:gray", alpha=0.7,
                   label=f"finished trial, dominated ({len(rest)})", zorder=2)
        if len(objectives) == 2 and len(front) > 1:
            ax.plot([r[second.metric] for r in front], [r[first.metric] for r in front], color="tab:red", linewidth=1.2,
                    linestyle="--", alpha=0.8, zorder=3)
        ax.scatter([r[second.metric] for r in front], [r[first.metric] for r in front], s=60, color="tab:red",
                   edgecolor="black", linewidth=0.6, label=f"Pareto front ({len(front)}; labels: trial ids)",
                   zorder=4)
        for r in front:
            ax.annotate(str(r["trial_id"]), (r[second.metric], r[first.metric]), xytext=(5, 4),
                        textcoords="offset points", fontsize=7)
        ax.set(xlabel=second.label, ylabel=first.label)
        title = f"Pareto front of {len(rows)} finished trials"
        if len(objectives) > 2:
            title += (f"\n(front over all {len(objectives)} objectives: "
                      f"{', '.join(o.metric for o in objectives)}; the first two drawn)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, framealpha=0.9, loc="best")
        return save_plot(figure, rows, out_dir, name)


def confirmation_plot(candidates: Sequence[Candidate], winner: Candidate, rule: str, metric: str, out_dir: Path,
                      name: str = "intervals") -> list[Path]:
    """Per configuration: its further seeds, their mean and 95% interval, and its search run apart."""
    plt = pyplot()
    rows: list[dict[str, Any]] = []
    with plt.style.context("default"):
        figure, ax = plt.subplots(figsize=(8, 1.2 + 0.7 * len(candidates)))
        for y, c in enumerate(candidates):
            iv = c.interval
            color = "tab:red" if c is winner else "tab:blue"
            further = [r for r in c.further_runs if math.isfinite(r.value)]
            ax.scatter([r.value for r in further], [y] * len(further), s=22, color=color, alpha=0.6, zorder=3)
            if iv.n >= 2 and math.isfinite(iv.low) and math.isfinite(iv.high):
                ax.errorbar(iv.mean, y, xerr=[[iv.mean - iv.low], [iv.high - iv.mean]], fmt="none", ecolor=color,
                            elinewidth=2, capsize=5, zorder=2)
            if math.isfinite(iv.mean):
                ax.plot(iv.mean, y, "|", color=color, markersize=16, markeredgewidth=2.5, zorder=4)
            if math.isfinite(c.search_value):
                ax.scatter([c.search_value], [y], s=60, marker="D", facecolors="none", edgecolors="black",
                           linewidths=1.2, zorder=5)
            for r in c.runs:
                rows.append({"rank": c.rank, "trial": r.trial_id, "seed": r.seed, "search_run": int(r.original),
                             metric: r.value, "mean": iv.mean, "low": iv.low, "high": iv.high, "n": iv.n,
                             "winner": int(c is winner)})
        ax.set_yticks(range(len(candidates)),
                      [f"#{c.rank} {c.trial_id}" + (f"\n(winner, {rule.replace('_', ' ')})" if c is winner else "")
                       for c in candidates], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"{metric} (dev)")
        ax.set_title(f"Confirmation of the search's {len(candidates)} best configurations", fontsize=10)
        ax.scatter([], [], s=22, color="tab:blue", label="further seed")
        ax.errorbar([], [], xerr=[], fmt="|", color="tab:blue", label="their mean, 95% interval")
        ax.scatter([], [], s=60, marker="D", facecolors="none", edgecolors="black",
                   label="search run (selected on it: not in the mean)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), framealpha=0.9)
        ax.grid(axis="x", alpha=0.3)
        return save_plot(figure, rows, out_dir, name)
