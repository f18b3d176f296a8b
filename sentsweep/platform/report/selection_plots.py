"""Plots of how a sweep's winner is selected: PNG artifacts, each with the same data as a CSV beside it
(:func:`~.plots.save_plot`).

- ``pareto_front`` (multi-objective sweeps, :mod:`.pareto_front`): the finished trials on the first two
  objectives, the Pareto front highlighted and connected;
- ``confirmation/intervals`` (the confirmation stage, :mod:`..driver.confirmation`): per configuration its
  further seeds, their mean and 95% interval, and the search run that selected it apart; the rule's winner marked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.platform.report.plots import pyplot, save_plot

if TYPE_CHECKING:
    from sentsweep.platform.confirm.stats import Candidate
    from sentsweep.platform.objectives import Objective


def pareto_plot(rows: Sequence[Mapping[str, Any]], objectives: Sequence[Objective], out_dir: Path,
                name: str = "pareto_front") -> list[Path]:
    """The finished trials (``rows``: :func:`~sentsweep.platform.report.pareto_front.front_rows`, with ``on_front``)
    on the
    second objective (x) against the first (y); the front highlighted, labelled with its trial ids and, for two
    objectives, connected in order of x. With three or more, the front is over all of them and the title says that
    only the first two are drawn."""
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
        ax.set_xlabel(second.label)
        ax.set_ylabel(first.label)
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
    """One row per configuration (the search's rank, best at the top): its further seeds as dots, their mean with its
    95% Student-t interval as a bar (none for a single seed), and the search run that selected it as a hollow
    diamond, apart from the figures (it was chosen for its value); the winner's row named by ``rule``."""
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
