"""``sentsweep compare --plots``: the best value so far and every trial's dev curve of the selected sweeps, each
PNG with a CSV of what it draws."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Run

from sentsweep.evaluation.metric_names import STSB_DEV
from sentsweep.platform.report.compare import run_label, trial_number, trial_runs
from sentsweep.platform.report.plots import pyplot, save_plot
from sentsweep.tracking.vocabulary import SWEEP_TAG, run_outcome

#: Line style of a trial's dev curve by how it ended (anything else: dashed).
CURVE_STYLES = {"finished": "-", "pruned": ":", "stopped": ":"}


def best_so_far_rows(sweep: Run, trials: list[Run]) -> list[dict[str, Any]]:
    metric = sweep.data.params.get("metric", STSB_DEV)
    better = max if sweep.data.params.get("mode", "max") == "max" else min
    rows, current = [], None
    for position, trial in enumerate(trials, 1):
        value = trial.data.metrics.get(f"best_{metric}", trial.data.metrics.get(metric))
        if value is not None and not math.isnan(value):
            current = value if current is None else better(current, value)
        rows.append({"sweep": sweep.data.tags.get(SWEEP_TAG, sweep.info.run_id[:8]), "trial": run_label(trial),
                     "number": trial_number(trial) or position, "outcome": run_outcome(trial),
                     metric: value, "best_so_far": current})
    return rows


def curve_rows(client: MlflowClient, sweep: Run, trials: list[Run]) -> list[dict[str, Any]]:
    """One row per dev evaluation of each trial (at a step logged twice, the first value)."""
    metric = sweep.data.params.get("metric", STSB_DEV)
    rows = []
    for trial in trials:
        history = sorted(client.get_metric_history(trial.info.run_id, metric), key=lambda h: (h.timestamp, h.step))
        first = {h.step: h.value for h in reversed(history)}
        points = sorted(first.items())
        rows.extend({"sweep": sweep.data.tags.get(SWEEP_TAG, sweep.info.run_id[:8]), "trial": run_label(trial),
                     "outcome": run_outcome(trial), "step": step, metric: value, "points": len(points)}
                    for step, value in points)
    return rows


def compare_plots(client: MlflowClient, sweeps: list[Run], out_dir: str | Path) -> list[Path]:
    """``best_so_far.png`` and ``dev_curves.png`` of ``sweeps``, each with its CSV; returns the PNGs."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    out = Path(out_dir)
    fig_best, ax_best = plt.subplots(figsize=(8, 5))
    fig_curves, ax_curves = plt.subplots(figsize=(8, 5))
    best_rows: list[dict[str, Any]] = []
    all_curves: list[dict[str, Any]] = []
    metrics = set()
    for index, sweep in enumerate(sweeps):
        metric = sweep.data.params.get("metric", STSB_DEV)
        metrics.add(metric)
        trials = trial_runs(client, sweep)
        rows = best_so_far_rows(sweep, trials)
        best_rows += rows
        name = rows[0]["sweep"] if rows else sweep.info.run_id[:8]
        ax_best.plot([r["number"] for r in rows], [math.nan if r["best_so_far"] is None else r["best_so_far"]
                                                   for r in rows], marker="o", label=name)
        color = f"C{index % 10}"
        curves = curve_rows(client, sweep, trials)
        all_curves += curves
        for label in dict.fromkeys(r["trial"] for r in curves):
            points = [r for r in curves if r["trial"] == label]
            outcome = points[0]["outcome"]
            steps, values = [r["step"] for r in points], [r[metric] for r in points]
            ax_curves.plot(steps, values, CURVE_STYLES.get(outcome, "--"), color=color, alpha=0.7,
                           marker="o" if len(points) == 1 else None, markersize=5)
            if outcome in ("pruned", "stopped"):
                ax_curves.plot(steps[-1], values[-1], "x", color=color, markersize=8, markeredgewidth=2)
        ax_curves.plot([], [], "-", color=color, label=name)
    shown = " / ".join(sorted(metrics)) or STSB_DEV
    numbers = sorted({r["number"] for r in best_rows})
    if numbers and len(numbers) <= 30:
        ax_best.set_xticks(numbers, [f"t{n:02d}" for n in numbers], fontsize=8)
    ax_best.set(xlabel="trial (as in the tables)", ylabel=f"best {shown} so far (dev)")
    ax_curves.set(xlabel="training step", ylabel=f"{shown} (dev)")
    legend = [Line2D([], [], color="black", linestyle=":", marker="x", markersize=7,
                     label="pruned (x: where it stopped)"),
              Line2D([], [], color="black", linestyle="--", label="failed, interrupted or running")]
    paths = []
    for fig, ax, name, rows, extra in ((fig_best, ax_best, "best_so_far", best_rows, []),
                                       (fig_curves, ax_curves, "dev_curves", all_curves, legend)):
        if sweeps:
            handles, _ = ax.get_legend_handles_labels()
            ax.legend(handles=[*handles, *extra], fontsize=8)
        ax.grid(alpha=0.3)
        paths.append(save_plot(fig, rows, out, name)[0])
    return paths
