"""``sentsweep compare``: sweeps (parent runs tagged ``sentsweep.role=sweep``), their trials, confirmations and
Pareto fronts read back from MLflow as tables, and ``--plots``: the best value so far and every trial's dev curve."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Run

from sentsweep.errors import ConfigError
from sentsweep.evaluation.metric_names import STSB_DEV
from sentsweep.platform.report.plots import pyplot, save_plot
from sentsweep.tables import markdown_table
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.names import figure, placement_label, tracked_key, trial_label
from sentsweep.yaml_io import number_or_same

#: Test metrics shown per sweep (whole tasks and averages, not STS subsets).
SUMMARY_SUFFIXES = ("_all", "_test", "_avg7", "_avg", "_acc")
#: The outcome columns of the sweeps table; those after the first four only when a trial ended so.
OUTCOME_COLUMNS = ("finished", "pruned", "failed", "running", "stopped", "interrupted", "not started")
#: Columns of counts, steps and seconds: numbers, but no figures of a metric.
PLAIN_COLUMNS = frozenset({"trials", *OUTCOME_COLUMNS, "step", "seeds", "rank", "wall_s", "gpu_s"})
#: The attribute of the trials table that names its columns of searched settings.
SETTINGS_ATTR = "settings"


def experiment_ids(client: MlflowClient, names: Sequence[str] | None = None) -> list[str]:
    if not names:
        return [e.experiment_id for e in client.search_experiments()]
    ids = []
    for name in names:
        if (found := client.get_experiment_by_name(name)) is None:
            known = ", ".join(e.name for e in client.search_experiments()) or "none"
            raise ConfigError(f"no MLflow experiment '{name}' (known: {known})", field="--experiment")
        ids.append(found.experiment_id)
    return ids


def find_sweeps(client: MlflowClient, experiments: Sequence[str] | None = None,
                sweeps: Sequence[str] | None = None) -> list[Run]:
    """Parent runs of sweeps, newest first; ``sweeps`` selects by name, name prefix or run id."""
    runs = client.search_runs(experiment_ids(client, experiments), filter_string=f"tags.`{vocab.ROLE_TAG}` = 'sweep'",
                              order_by=["attributes.start_time DESC"], max_results=1000)
    if not sweeps:
        return runs
    chosen = []
    for wanted in sweeps:
        hits = [r for r in runs if r.info.run_id == wanted or r.data.tags.get(vocab.SWEEP_TAG, "") == wanted]
        hits = hits or [r for r in runs if r.data.tags.get(vocab.SWEEP_TAG, "").startswith(wanted)]
        if not hits:
            known = ", ".join(r.data.tags.get(vocab.SWEEP_TAG, "?") for r in runs) or "none"
            raise ConfigError(f"no sweep named '{wanted}' (known: {known})", field="--sweeps")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def _metric(sweep: Run) -> str:
    return sweep.data.params.get("metric", STSB_DEV)


def trial_number(run: Run) -> int | None:
    text = run.data.tags.get(vocab.TRIAL_NUMBER_TAG, "")
    return int(text) if text.isdigit() else None


def run_label(run: Run) -> str:
    return trial_label(trial_number(run)) or run.data.tags.get(vocab.TRIAL_ID_TAG, run.info.run_id[:8])


class SweepRuns(NamedTuple):
    """A sweep's parent run, its trials' runs (by number, those without one last) and its confirmation run."""

    sweep: Run
    trials: list[Run]
    stage: Run | None


def child_runs(client: MlflowClient, sweep: Run) -> SweepRuns:
    """The sweep's runs below its parent, in one search: the search's trials and the confirmation stage's run."""
    runs = vocab.tagged_runs(client, sweep.info.experiment_id, {vocab.PARENT_TAG: sweep.info.run_id})
    stages = [r for r in runs if r.data.tags.get(vocab.ROLE_TAG) == vocab.CONFIRMATION_ROLE]
    trials = [r for r in runs if r not in stages]
    return SweepRuns(sweep, sorted(trials, key=lambda r: (trial_number(r) is None, trial_number(r) or 0)),
                     stages[0] if stages else None)


def labels_by_id(trials: Sequence[Run]) -> dict[str, str]:
    return {t.data.tags[vocab.TRIAL_ID_TAG]: run_label(t) for t in trials if vocab.TRIAL_ID_TAG in t.data.tags}


def confirmation_rows(sweep: Run, stage: Run, labels: dict[str, str]) -> list[dict[str, Any]]:
    """One row per confirmed configuration: its search value, its further seeds' summary, the rule's choice."""
    m, tags = stage.data.metrics, stage.data.tags
    ranks = sorted({int(k[1:].split("_")[0]) for k in m if k.startswith("r") and k.endswith(("_mean", "_search"))})
    winner = tags.get("sentsweep.confirm.winner_rank", "")
    return [{"sweep": sweep.data.tags.get(vocab.SWEEP_TAG, ""), "rank": rank,
             "trial": labels.get(trial := tags.get(f"sentsweep.confirm.r{rank}_trial", ""), trial),
             "search": m.get(f"r{rank}_search", math.nan), "seeds": int(m.get(f"r{rank}_n", 0)),
             "mean": m.get(f"r{rank}_mean", math.nan), "sd": m.get(f"r{rank}_std", math.nan),
             "low": m.get(f"r{rank}_low", math.nan), "high": m.get(f"r{rank}_high", math.nan),
             "winner": f"yes ({tags.get('sentsweep.confirm.rule', '')})" if str(rank) == winner else "",
             "status": stage.info.status.lower()} for rank in ranks]


def pareto_rows(client: MlflowClient, sweep: Run) -> list[dict[str, Any]]:
    """A multi-objective sweep's front, one row per trial (best first objective first), from the parent's
    ``pareto_front.csv``, or only the ids when that cannot be read; none for a single metric."""
    tags = sweep.data.tags
    if vocab.OBJECTIVES_TAG not in tags or vocab.PARETO_TAG not in tags:
        return []
    base = {"sweep": tags.get(vocab.SWEEP_TAG, ""), "objectives": tags[vocab.OBJECTIVES_TAG]}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            name = f"{vocab.PARETO_ARTIFACTS}/{vocab.PARETO_NAME}.csv"
            table = pd.read_csv(client.download_artifacts(sweep.info.run_id, name, tmp), dtype={"trial_id": str})
    except Exception:  # noqa: BLE001 - not uploaded yet (sync delivers it) or unreadable: the ids alone
        return [{**base, "trial": t} for t in tags[vocab.PARETO_TAG].split(",") if t]
    front = table[table["on_front"] == 1].drop(columns="on_front").rename(columns={"trial_id": "trial"})
    return [{**base, **{k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}}
            for row in front.to_dict("records")]


def _bookkeeping(metrics: dict[str, float], key: str) -> float:
    """A bookkeeping value of a trial run, under its MLflow key or, logged before it moved there, its own."""
    return metrics.get(tracked_key(key), metrics.get(key, math.nan))


def _searched(trials: list[Run]) -> list[str]:
    """Params whose value differs between a sweep's trials (a trial that logged none does not count)."""
    keys = dict.fromkeys(k for t in trials for k in t.data.params)
    return [k for k in keys if len({t.data.params[k] for t in trials if k in t.data.params}) > 1]


def _trial_value(trial: Run, metric: str) -> float:
    """A trial run's value of the sweep's metric: its best, else its last (NaN when it logged none)."""
    return trial.data.metrics.get(f"best_{metric}", trial.data.metrics.get(metric, math.nan))


def _search_best(trials: list[Run], metric: str, mode: str) -> tuple[float, str]:
    """The best finished trial's value and label, for a sweep whose finalize did not run (``--no-finalize``, or
    still running): what finalize would have ranked first."""
    values = [(value, run_label(t)) for t in trials
              if vocab.run_outcome(t) == "finished" and not math.isnan(value := _trial_value(t, metric))]
    return (max if mode == "max" else min)(values, key=lambda pair: pair[0]) if values else (math.nan, "")


def sweep_row(sweep: Run, trials: list[Run]) -> dict[str, Any]:
    params, tags, metrics = sweep.data.params, sweep.data.tags, sweep.data.metrics
    metric = _metric(sweep)
    statuses = [vocab.run_outcome(t) for t in trials]
    best_id, labels = tags.get(vocab.BEST_TRIAL_TAG, ""), labels_by_id(trials)
    best = metrics.get(f"best_{metric}", math.nan)
    best_trial = tags.get(vocab.BEST_LABEL_TAG) or labels.get(best_id, best_id)
    if math.isnan(best) and not best_trial:
        best, best_trial = _search_best(trials, metric, params.get("mode", "max"))
    row: dict[str, Any] = {"sweep": tags.get(vocab.SWEEP_TAG, sweep.info.run_name), "method": params.get("method"),
                           "space": tags.get(vocab.SPACE_TAG) or params.get("method"),
                           "status": sweep.info.status.lower(), "trials": len(trials),
                           **{s: statuses.count(s) for i, s in enumerate(OUTCOME_COLUMNS) if i < 4 or s in statuses},
                           "metric": metric, "best": best, "best_trial": best_trial}
    if (reference := tags.get(vocab.REFERENCE_TRIAL_TAG)) is not None:  # the paper's setting, a protected trial
        row["reference_trial"] = labels.get(reference, reference)
    row.update({k: v for k, v in sorted(metrics.items()) if k.startswith("final_") and k.endswith(SUMMARY_SUFFIXES)})
    if f"confirmed_{metric}_mean" in metrics:  # the confirmation stage: the winner's seeds
        row.update({k: metrics.get(f"confirmed_{metric}_{part}", math.nan)
                    for k, part in (("confirmed", "mean"), ("confirmed_low", "low"), ("confirmed_high", "high"))})
        row["winner_changed"] = tags.get(vocab.CHANGED_TAG, "")
    row.update(wall_s=metrics.get("sweep_wall_seconds", math.nan), gpu_s=metrics.get("gpu_seconds", math.nan),
               run_id=sweep.info.run_id)
    return row


def trial_rows(sweep: Run, trials: list[Run], searched: Sequence[str]) -> list[dict[str, Any]]:
    metric = _metric(sweep)
    labelled = any(vocab.REFERENCE_TAG in t.data.tags for t in trials)
    rows = []
    for trial in trials:
        m = trial.data.metrics
        row: dict[str, Any] = {"sweep": sweep.data.tags.get(vocab.SWEEP_TAG, ""), "trial": run_label(trial),
                               "status": vocab.run_outcome(trial), metric: _trial_value(trial, metric),
                               "step": _bookkeeping(m, "step")}
        if labelled:  # the paper's setting, which no scheduler stops
            row["reference"] = trial.data.tags.get(vocab.REFERENCE_TAG, "")
        row.update({k: v for k, v in m.items() if k.endswith("_test") or k == "sts_avg7"})
        row.update({k: number_or_same(trial.data.params.get(k)) for k in searched})
        # Tune's seconds over every attempt; the trial's own wall_seconds start again with a restored attempt
        wall = _bookkeeping(m, "time_total_s")
        row.update(wall_s=_bookkeeping(m, "wall_seconds") if math.isnan(wall) else wall,
                   placement=placement_label(trial.data.tags), reason=trial.data.tags.get(vocab.REASON_TAG, ""),
                   run_id=trial.info.run_id)
        rows.append(row)
    return rows


def sweep_runs(client: MlflowClient, experiments: Sequence[str] | None = None,
               sweeps: Sequence[str] | None = None) -> list[SweepRuns]:
    return [child_runs(client, sweep) for sweep in find_sweeps(client, experiments, sweeps)]


def compare(client: MlflowClient, experiments: Sequence[str] | None = None, sweeps: Sequence[str] | None = None, *,
            found: Sequence[SweepRuns] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(sweeps, trials) tables; the confirmation and Pareto tables ride along in ``sweeps.attrs``."""
    sweep_table, trial_table, confirm_table, front_table, settings = [], [], [], [], set()
    found_runs = found if found is not None else sweep_runs(client, experiments, sweeps)
    for sweep, trials, stage in found_runs:
        sweep_table.append(sweep_row(sweep, trials))
        trial_table.extend(trial_rows(sweep, trials, searched := _searched(trials)))
        settings.update(searched)
        labels = labels_by_id(trials)
        if stage is not None:
            confirm_table.extend(confirmation_rows(sweep, stage, labels))
        front_table.extend({**row, "trial": labels.get(t := str(row.get("trial", "")), t)}
                           for row in pareto_rows(client, sweep))
    table, trial_frame = pd.DataFrame(sweep_table), pd.DataFrame(trial_table)
    table.attrs.update(confirmation=pd.DataFrame(confirm_table), pareto=pd.DataFrame(front_table))
    trial_frame.attrs[SETTINGS_ATTR] = sorted(settings)
    return table, trial_frame


def _shown(value: Any) -> Any:
    return figure(value) if isinstance(value, float) and math.isfinite(value) else value


def to_markdown(table: pd.DataFrame, plain: Sequence[str] = ()) -> str:
    """The table in markdown, each figure as the sweep's own lines show it (``83.20``); the columns in ``plain``
    and :data:`PLAIN_COLUMNS` (counts, settings) keep their numbers' shortest form."""
    if table.empty:
        return "(none)"
    kept = PLAIN_COLUMNS.union(plain)
    columns = [table[c] if c in kept else table[c].map(_shown) for c in table.columns]
    return markdown_table(zip(*columns, strict=True), list(table.columns))


def render(sweeps: pd.DataFrame, trials: pd.DataFrame, fmt: str = "md") -> str:
    if fmt == "csv":
        return trials.to_csv(index=False)
    settings = trials.attrs.get(SETTINGS_ATTR, ())
    text = (f"## Sweeps\n\n{to_markdown(sweeps.drop(columns='run_id', errors='ignore'))}\n\n"
            f"## Trials\n\n{to_markdown(trials.drop(columns='run_id', errors='ignore'), settings)}\n")
    for attr, heading, about in (
            ("confirmation", "Confirmation", "The best configurations re-run with further seeds: mean, sd and 95% "
             "interval over their further seeds (the search's run apart: `search`)."),
            ("pareto", "Pareto front", "The finished trials no other one beats on every objective (multi-objective "
             "sweeps), best first objective first.")):
        if (table := sweeps.attrs.get(attr)) is not None and not table.empty:
            text += f"\n## {heading}\n\n{about}\n\n{to_markdown(table)}\n"
    return text


#: Line style of a trial's dev curve by how it ended (anything else: dashed).
CURVE_STYLES = {"finished": "-", "pruned": ":", "stopped": ":"}


def compare_plots(client: MlflowClient, found: Sequence[SweepRuns], out_dir: str | Path) -> list[Path]:
    """``best_so_far.png`` and ``dev_curves.png`` of the sweeps in ``found`` (:func:`sweep_runs`), each with its CSV
    (a dev curve takes the first value of a step logged twice); returns the PNGs."""
    from matplotlib.lines import Line2D

    plt = pyplot()
    (fig_best, ax_best), (fig_curves, ax_curves) = plt.subplots(figsize=(8, 5)), plt.subplots(figsize=(8, 5))
    best_rows: list[dict[str, Any]] = []
    curve_rows: list[dict[str, Any]] = []
    for index, (sweep, trials, _) in enumerate(found):
        metric, color = _metric(sweep), f"C{index % 10}"
        name = sweep.data.tags.get(vocab.SWEEP_TAG, sweep.info.run_id[:8]) if trials else sweep.info.run_id[:8]
        better = max if sweep.data.params.get("mode", "max") == "max" else min
        current = None
        shown: list[dict[str, Any]] = []  # this sweep's best-so-far rows
        for position, trial in enumerate(trials, 1):
            label, outcome = run_label(trial), vocab.run_outcome(trial)
            value = trial.data.metrics.get(f"best_{metric}", trial.data.metrics.get(metric))
            if value is not None and not math.isnan(value):
                current = value if current is None else better(current, value)
            shown.append({"sweep": name, "trial": label, "number": trial_number(trial) or position,
                          "outcome": outcome, metric: value, "best_so_far": current})
            history = sorted(client.get_metric_history(trial.info.run_id, metric), key=lambda h: (h.timestamp, h.step))
            points = sorted({h.step: h.value for h in reversed(history)}.items())
            curve_rows.extend({"sweep": name, "trial": label, "outcome": outcome, "step": step, metric: value,
                               "points": len(points)} for step, value in points)
            if points:
                steps, values = zip(*points, strict=True)
                ax_curves.plot(steps, values, CURVE_STYLES.get(outcome, "--"), color=color, alpha=0.7,
                               marker="o" if len(points) == 1 else None, markersize=5)
                if outcome in ("pruned", "stopped"):
                    ax_curves.plot(steps[-1], values[-1], "x", color=color, markersize=8, markeredgewidth=2)
        best_rows += shown
        ax_best.plot([r["number"] for r in shown], [math.nan if r["best_so_far"] is None else r["best_so_far"]
                                                    for r in shown], marker="o", label=name)
        ax_curves.plot([], [], "-", color=color, label=name)
    metrics = " / ".join(sorted({_metric(runs.sweep) for runs in found})) or STSB_DEV
    numbers = sorted({r["number"] for r in best_rows})
    if numbers and len(numbers) <= 30:
        ax_best.set_xticks(numbers, [f"t{n:02d}" for n in numbers], fontsize=8)
    ax_best.set(xlabel="trial (as in the tables)", ylabel=f"best {metrics} so far (dev)")
    ax_curves.set(xlabel="training step", ylabel=f"{metrics} (dev)")
    legend = [Line2D([], [], color="black", linestyle=":", marker="x", markersize=7,
                     label="pruned or stopped (x: where it stopped)"),
              Line2D([], [], color="black", linestyle="--", label="failed, interrupted or running")]
    paths = []
    for fig, ax, name, rows, extra in ((fig_best, ax_best, "best_so_far", best_rows, []),
                                       (fig_curves, ax_curves, "dev_curves", curve_rows, legend)):
        if found:
            handles, _ = ax.get_legend_handles_labels()
            ax.legend(handles=[*handles, *extra], fontsize=8)
        ax.grid(alpha=0.3)
        paths.append(save_plot(fig, rows, Path(out_dir), name)[0])
    return paths
