"""Plots of a sweep (learning curves, parallel coordinates, fANOVA importances, optimization history) as PNGs,
each with its data as a CSV beside it (:func:`save_plot`), drawn offline with matplotlib's Agg."""

from __future__ import annotations

import csv
import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sentsweep.platform.results import infeasibility, is_draining, is_final, is_warm_start, result_labels, trial_end

if TYPE_CHECKING:
    import optuna
    from ray.tune import ResultGrid


Status = Literal["finished", "pruned", "stopped", "not started", "infeasible", "failed"]
STATUS_COLOURS: dict[Status, str] = {"finished": "tab:blue", "pruned": "tab:orange", "stopped": "tab:purple",
                                     "not started": "tab:olive", "infeasible": "tab:red", "failed": "tab:gray"}
#: The statuses of a trial that ended early: its curve ends with a cross where it stopped.
EARLY: tuple[Status, ...] = ("pruned", "stopped")
#: The fewest finished, feasible trials an importance is drawn from (fewer rank parameters by noise).
MIN_IMPORTANCE_TRIALS = 8


@dataclass
class TrialRecord:
    """One trial as the plots see it: its searched parameters, its dev curve, how it ended."""

    trial_id: str
    status: Status
    params: dict[str, Any]
    steps: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    #: the trial's label, ``t03`` (:mod:`sentsweep.tracking.names`); its id when not given
    label: str = ""
    #: its final result, and the reports a searcher selects from (neither final nor draining)
    metrics: dict[str, Any] = field(default_factory=dict)
    reports: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.label = self.label or self.trial_id

    @property
    def last_value(self) -> float | None:
        return self.values[-1] if self.values else None

    def value(self, mode: str = "max") -> float | None:
        """A finished trial's best value, else its last reported one."""
        if self.status != "finished" or not self.values:
            return self.last_value
        return max(self.values) if mode == "max" else min(self.values)


def trial_status(metrics: dict[str, Any] | None, error: bool = False) -> Status:
    if not error and infeasibility(metrics):
        return "infeasible"
    return trial_end(metrics, error)


def trial_records(results: ResultGrid, metric: str, searched: Sequence[str]) -> list[TrialRecord]:
    """Every trial of ``results`` (labelled by the order Tune created them) with its ``searched`` values and reports."""
    records, labels = [], result_labels(results)
    for result in results:
        metrics, config = dict(result.metrics or {}), result.config or {}
        record = TrialRecord(str(metrics.get("trial_id", getattr(result, "path", "?"))),
                             trial_status(metrics, bool(result.error)), {k: config[k] for k in searched if k in config},
                             label=labels.get(str(metrics.get("trial_id")), ""), metrics=metrics)
        frame = result.metrics_dataframe
        for report in frame.to_dict("records") if frame is not None else []:
            if is_final(report):
                continue
            value, step = report.get(metric), report.get("step")
            if value is not None and math.isfinite(float(value)) and step is not None:
                record.steps.append(float(step))
                record.values.append(float(value))
            if not is_draining(report):
                record.reports.append(report)
        records.append(record)
    return records


def save_plot(figure: Any, rows: Iterable[Mapping[str, Any]], out_dir: Path, name: str) -> list[Path]:
    """``<name>.png`` and ``<name>.csv`` (the plotted data) in ``out_dir``; closes the figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, table = out_dir / f"{name}.png", out_dir / f"{name}.csv"
    figure.savefig(png, dpi=110, bbox_inches="tight")
    pyplot().close(figure)
    rows = list(rows)
    with table.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
        writer.writeheader()
        writer.writerows(rows)
    return [png, table]


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _status_legend(ax: Any, statuses: Iterable[Status], extra: Sequence[Any] = (), outside: bool = False) -> None:
    from matplotlib.lines import Line2D

    counts = Counter(statuses)
    handles = [Line2D([], [], color=STATUS_COLOURS[s], label=f"{s} ({counts[s]})")  # type: ignore[index]
               for s in STATUS_COLOURS if s in counts]
    ax.legend(handles=[*handles, *extra], fontsize=8, framealpha=0.9, title="trial status", title_fontsize=8,
              **({"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)} if outside else {"loc": "best"}))


def learning_curves(records: Sequence[TrialRecord], metric: str, out_dir: Path, stopped_by: str = "ASHA") -> list[Path]:
    from matplotlib.lines import Line2D

    figure, ax = pyplot().subplots(figsize=(8, 5))
    for r in (r for r in records if r.steps):
        ax.plot(r.steps, r.values, color=STATUS_COLOURS[r.status], alpha=0.8, linewidth=1.2, marker=".", markersize=4)
        if r.status in EARLY:
            ax.plot(r.steps[-1], r.values[-1], color=STATUS_COLOURS[r.status], marker="x", markersize=9,
                    markeredgewidth=2)
    rows = [{"trial": r.label, "trial_id": r.trial_id, "status": r.status, "step": step, metric: value,
             "stopped_here": int(r.status in EARLY and i == len(r.steps) - 1)}
            for r in records for i, (step, value) in enumerate(zip(r.steps, r.values, strict=True))]
    ax.set(xlabel="training step (optimizer updates)", ylabel=f"{metric} (dev)",
           title=f"Learning curves of {len(records)} trials")
    ax.grid(alpha=0.3)
    by = [name for status, name in (("pruned", stopped_by), ("stopped", "the budget"))
          if any(r.status == status for r in records)]
    stop = Line2D([], [], color="black", marker="x", linestyle="none", markersize=8, markeredgewidth=2,
                  label="stopped by " + " or ".join(by))
    _status_legend(ax, [r.status for r in records], [stop] if by else [])
    return save_plot(figure, rows, out_dir, "learning_curves")


def _axis(values: Sequence[Any]) -> tuple[Callable[[Any], float], list[float], list[str], bool]:
    """How a parameter's values map to [0, 1]: transform, tick positions and labels, and whether log."""
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):  # choices
        choices = sorted({str(v) for v in values})
        span = max(1, len(choices) - 1)
        return (lambda v: choices.index(str(v)) / span), [i / span for i in range(len(choices))], choices, False
    low, high = float(min(values)), float(max(values))
    log = low > 0 and high / low >= 100
    f = math.log10 if log else float
    lo, hi = f(low), f(high)
    width = (hi - lo) or 1.0
    ticks = [0.0, 0.5, 1.0]
    labels = [f"{(10 ** (lo + t * width)) if log else lo + t * width:.3g}" for t in ticks]
    return (lambda v: (f(float(v)) - lo) / width), ticks, labels, log


def parallel_coordinates(records: Sequence[TrialRecord], metric: str, out_dir: Path) -> list[Path]:
    names = list(dict.fromkeys(k for r in records for k in r.params))
    valued = [r.last_value for r in records if r.last_value is not None]
    axes = [*names, metric]
    figure, ax = pyplot().subplots(figsize=(max(6, 2.2 * len(axes)), 5))
    transforms = {}
    for i, name in enumerate(names):
        transforms[name], ticks, labels, log = _axis([r.params[name] for r in records if name in r.params])
        for t, label in zip(ticks, labels, strict=True):
            ax.annotate(label, (i, t), xytext=(-4, 0), textcoords="offset points", ha="right", va="center", fontsize=7,
                        bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"}, zorder=5)
        if log:
            names[i] = f"{name}\n(log scale)"
    if valued:
        metric_transform, metric_ticks, metric_labels, _ = _axis(valued)
        for t, label in zip(metric_ticks, metric_labels, strict=True):
            ax.annotate(label, (len(axes) - 1, t), xytext=(4, 0), textcoords="offset points", ha="left",
                        va="center", fontsize=7)
    no_value = -0.15
    rows = []
    for r in sorted(records, key=lambda r: r.status == "finished"):  # finished lines on top
        ys = [transforms[n](r.params[n]) if n in r.params else math.nan for n in transforms]
        ys.append(no_value if r.last_value is None else metric_transform(r.last_value))
        ax.plot(range(len(axes)), ys, color=STATUS_COLOURS[r.status], alpha=0.75,
                linewidth=2.0 if r.status == "finished" else 1.2)
        rows.append({"trial": r.label, "trial_id": r.trial_id, "status": r.status, **r.params, metric: r.last_value})
    for i in range(len(axes)):
        ax.axvline(i, color="black", linewidth=0.8)
    ax.axhline(no_value, color="lightgray", linestyle=":", linewidth=1)
    ax.annotate("no value", (len(axes) - 1, no_value), xytext=(4, 0), textcoords="offset points", fontsize=7,
                va="center")
    ax.set_xticks(range(len(axes)), [*names, f"{metric}\n(last reported)"], fontsize=8)
    ax.set_yticks([])
    ax.set(xlim=(-0.6, len(axes) - 0.4), ylim=(no_value - 0.08, 1.08))
    ax.set_title(f"Parallel coordinates of {len(records)} trials\n"
                 "(pruned and stopped ones at their last reported value)", fontsize=10)
    _status_legend(ax, [r.status for r in records], outside=True)
    return save_plot(figure, rows, out_dir, "parallel_coordinate")


def param_importances(study: optuna.Study, out_dir: Path) -> list[Path]:
    """Seeded fANOVA importance over the sweep's own finished, feasible trials; ValueError when none can be ranked."""
    import optuna

    trials = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
              if not is_warm_start(t) and not any(v > 0 for v in t.constraints.values())]
    if len(trials) < MIN_IMPORTANCE_TRIALS:
        raise ValueError(f"{len(trials)} finished feasible trial(s): an importance needs at least "
                         f"{MIN_IMPORTANCE_TRIALS}")
    basis = optuna.create_study(directions=study.directions)
    basis.add_trials(trials)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        importance = optuna.importance.get_param_importances(
            basis, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0),
            target=(lambda t: t.values[0]) if len(study.directions) > 1 else None)  # the first objective
    if not importance:
        raise ValueError("no parameter varies among the finished trials")
    names = list(importance)[::-1]
    figure, ax = pyplot().subplots(figsize=(8, 1.5 + 0.45 * len(names)))
    ax.barh(names, [importance[n] for n in names], color="tab:blue")
    for i, n in enumerate(names):
        ax.annotate(f"{importance[n]:.2f}", (importance[n], i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set(xlabel="fANOVA importance (share of the metric's variance)",
           xlim=(0, max(1.0, max(importance.values()) * 1.15)))
    ax.set_title(f"Parameter importance, resting on {len(trials)} finished feasible trials "
                 f"(of {len(study.trials)})" + ("; first objective" if len(study.directions) > 1 else ""))
    rows = [{"param": n, "importance": v, "n_trials": len(trials)} for n, v in importance.items()]
    return save_plot(figure, rows, out_dir, "param_importances")


def optimization_history(records: Sequence[TrialRecord], metric: str, out_dir: Path, mode: str = "max") -> list[Path]:
    """Every trial's value by number, coloured by how it ended; the line is the best finished value so far."""
    figure, ax = pyplot().subplots(figsize=(8, 5))
    rows, best = [], None
    for number, r in enumerate(records, 1):
        value = r.value(mode)
        if r.status == "finished" and value is not None:
            best = value if best is None else (max if mode == "max" else min)(best, value)
        rows.append({"trial": r.label, "number": number, "status": r.status, metric: value, "best_so_far": best})
    for status in STATUS_COLOURS:
        shown = [row for row in rows if row["status"] == status and row[metric] is not None]
        ax.scatter([row["number"] for row in shown], [row[metric] for row in shown], color=STATUS_COLOURS[status],
                   marker="o" if status == "finished" else "s", s=36, zorder=3)
    missing = [row["number"] for row in rows if row[metric] is None]
    if missing:
        ax.plot(missing, [0] * len(missing), "|", color=STATUS_COLOURS["failed"], markersize=14,
                transform=ax.get_xaxis_transform(), clip_on=False)
    ax.step([row["number"] for row in rows], [math.nan if row["best_so_far"] is None else row["best_so_far"]
                                              for row in rows], where="post", color="black", linewidth=1.2)
    ax.set_xticks([row["number"] for row in rows], [row["trial"] for row in rows],
                  rotation=90 if len(rows) > 20 else 0, fontsize=7 if len(rows) > 20 else 8)
    ax.set(xlabel="trial (as in the tables and the runs' names)",
           ylabel=f"{metric} (dev; pruned or stopped: its last value)",
           title=f"Optimization history of {len(records)} trials (line: best finished so far)")
    ax.grid(alpha=0.3)
    _status_legend(ax, [r.status for r in records], outside=True)
    return save_plot(figure, rows, out_dir, "optimization_history")


def sweep_plots(study: Any | None, records: Sequence[TrialRecord], metric: str, out_dir: str | Path,
                stopped_by: str = "ASHA", mode: str = "max") -> tuple[list[Path], dict[str, str]]:
    """Every plot of the sweep in ``out_dir``: the files written, and why each plot not drawn was skipped."""
    out = Path(out_dir)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    draws: dict[str, Callable[[], list[Path]]] = {
        "learning_curves": lambda: learning_curves(records, metric, out, stopped_by),
        "parallel_coordinate": lambda: parallel_coordinates(records, metric, out),
        "optimization_history": lambda: optimization_history(records, metric, out, mode),
        **({"param_importances": lambda: param_importances(study, out)} if study is not None else {})}
    for name, draw in draws.items():
        if not records and name != "param_importances":
            skipped[name] = "no trial results"
            continue
        try:
            written += draw()
        except (ValueError, RuntimeError) as exc:  # too few trials to rank, nothing varies
            skipped[name] = f"{type(exc).__name__}: {exc}"
            pyplot().close("all")
    return written, skipped
