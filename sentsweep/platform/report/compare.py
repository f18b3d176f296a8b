"""Read sweeps back from MLflow: sweeps and their trials side by side, as tables and plots.

A sweep is a parent run tagged ``sentsweep.role=sweep``; its trials are the child runs carrying its run
id in ``mlflow.parentRunId``, and its confirmation stage (:mod:`..confirm.stage`) is the child run tagged
``sentsweep.role=confirmation``, whose per-configuration figures (``r<rank>_mean``, ``_std``, ``_low``,
``_high``, ``_n``, ``_search``) make the confirmation table. A multi-objective sweep's Pareto front (its tag and
``pareto/pareto_front.csv``, :mod:`..search.pareto_front`) makes the Pareto table. Everything here is a query: it works
against the embedded sqlite store and against a tracking server alike, while sweeps run or after they end.

>>> sweeps, trials = compare(MlflowClient("sqlite:///mlruns.db"))   # doctest: +SKIP
>>> print(to_markdown(sweeps))                                        # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Run

from sentsweep.errors import ConfigError
from sentsweep.evaluation.metric_names import STSB_DEV
from sentsweep.platform.confirm.stats import CHANGED_TAG
from sentsweep.platform.search.pareto_front import OBJECTIVES_TAG, PARETO_ARTIFACTS, PARETO_NAME, PARETO_TAG
from sentsweep.tables import markdown_table
from sentsweep.tracking.placement import placement_label
from sentsweep.tracking.vocabulary import (
    CONFIRMATION_ROLE,
    PARENT_TAG,
    REASON_TAG,
    REFERENCE_TAG,
    REFERENCE_TRIAL_TAG,
    ROLE_TAG,
    SWEEP_TAG,
    TRIAL_ID_TAG,
)

SWEEP_FILTER = f"tags.`{ROLE_TAG}` = 'sweep'"
#: Test metrics shown per sweep (whole tasks and averages, not STS subsets).
SUMMARY_SUFFIXES = ("_all", "_test", "_avg7", "_avg", "_acc")
STATUS_NAMES = {"FINISHED": "finished", "KILLED": "pruned", "FAILED": "failed", "RUNNING": "running"}


def experiment_ids(client: MlflowClient, names: Sequence[str] | None = None) -> list[str]:
    """Ids of the named experiments (all active ones when ``names`` is empty)."""
    if not names:
        return [e.experiment_id for e in client.search_experiments()]
    ids = []
    for name in names:
        found = client.get_experiment_by_name(name)
        if found is None:
            known = ", ".join(e.name for e in client.search_experiments()) or "none"
            raise ConfigError(f"no MLflow experiment '{name}' (known: {known})", field="--experiment")
        ids.append(found.experiment_id)
    return ids


def find_sweeps(client: MlflowClient, experiments: Sequence[str] | None = None,
                sweeps: Sequence[str] | None = None) -> list[Run]:
    """Parent runs of sweeps, newest first; ``sweeps`` selects by name, name prefix or run id."""
    runs = client.search_runs(experiment_ids(client, experiments), filter_string=SWEEP_FILTER,
                              order_by=["attributes.start_time DESC"], max_results=1000)
    if not sweeps:
        return runs
    chosen = []
    for wanted in sweeps:
        hits = [r for r in runs if r.info.run_id == wanted or r.data.tags.get(SWEEP_TAG, "") == wanted]
        hits = hits or [r for r in runs if r.data.tags.get(SWEEP_TAG, "").startswith(wanted)]
        if not hits:
            raise ConfigError(f"no sweep named '{wanted}' (known: "
                              f"{', '.join(r.data.tags.get(SWEEP_TAG, '?') for r in runs) or 'none'})",
                              field="--sweeps")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def trial_runs(client: MlflowClient, sweep: Run) -> list[Run]:
    """The search's trials of a sweep (its child runs but the confirmation stage's), oldest first."""
    query = f"tags.`{PARENT_TAG}` = '{sweep.info.run_id}'"
    runs = client.search_runs([sweep.info.experiment_id], filter_string=query,
                              order_by=["attributes.start_time ASC"], max_results=10_000)
    return [r for r in runs if r.data.tags.get(ROLE_TAG) != CONFIRMATION_ROLE]


def confirmation_run(client: MlflowClient, sweep: Run) -> Run | None:
    """The sweep's confirmation stage run, if it has one."""
    query = f"tags.`{PARENT_TAG}` = '{sweep.info.run_id}' and tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'"
    found = client.search_runs([sweep.info.experiment_id], filter_string=query, max_results=1)
    return found[0] if found else None


def confirmation_rows(sweep: Run, stage: Run) -> list[dict[str, Any]]:
    """One row per confirmed configuration: its single-seed rank and value, the further seeds' mean, sd and 95%
    interval, and which one the rule chose."""
    m, tags = stage.data.metrics, stage.data.tags
    ranks = sorted({int(k[1:].split("_")[0]) for k in m if k.startswith("r") and k.endswith(("_mean", "_search"))})
    winner = tags.get("sentsweep.confirm.winner_rank", "")
    return [{"sweep": sweep.data.tags.get(SWEEP_TAG, ""), "rank": rank,
             "trial": tags.get(f"sentsweep.confirm.r{rank}_trial", ""), "search": m.get(f"r{rank}_search", math.nan),
             "seeds": int(m.get(f"r{rank}_n", 0)), "mean": m.get(f"r{rank}_mean", math.nan),
             "sd": m.get(f"r{rank}_std", math.nan), "low": m.get(f"r{rank}_low", math.nan),
             "high": m.get(f"r{rank}_high", math.nan),
             "winner": f"yes ({tags.get('sentsweep.confirm.rule', '')})" if str(rank) == winner else "",
             "status": STATUS_NAMES.get(stage.info.status, stage.info.status.lower())}
            for rank in ranks]


def pareto_rows(client: MlflowClient, sweep: Run) -> list[dict[str, Any]]:
    """A multi-objective sweep's Pareto front, one row per trial on it (best first objective first): its objective
    values and searched params from the parent's ``pareto_front.csv``, or only its id when that cannot be read;
    none for a single-metric sweep or one whose front is not recorded yet."""
    import tempfile

    tags = sweep.data.tags
    if OBJECTIVES_TAG not in tags or PARETO_TAG not in tags:
        return []
    base = {"sweep": tags.get(SWEEP_TAG, ""), "objectives": tags[OBJECTIVES_TAG]}
    ids = [t for t in tags[PARETO_TAG].split(",") if t]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = client.download_artifacts(sweep.info.run_id, f"{PARETO_ARTIFACTS}/{PARETO_NAME}.csv", tmp)
            table = pd.read_csv(path, dtype={"trial_id": str})
    except Exception:  # noqa: BLE001 - not uploaded yet (sync delivers it) or unreadable: the ids alone
        return [{**base, "trial": t} for t in ids]
    front = table[table["on_front"] == 1].drop(columns="on_front").rename(columns={"trial_id": "trial"})
    return [{**base, **{k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))}}
            for row in front.to_dict("records")]


def _metric(run: Run, key: str) -> float:
    value = run.data.metrics.get(key)
    return float(value) if value is not None else math.nan


def _searched(trials: list[Run]) -> list[str]:
    """Params whose value differs between the trials of a sweep (a trial that logged none, having failed
    before it started, does not make every param look searched)."""
    keys = dict.fromkeys(k for t in trials for k in t.data.params)
    return [k for k in keys if len({t.data.params[k] for t in trials if k in t.data.params}) > 1]


def sweep_row(sweep: Run, trials: list[Run]) -> dict[str, Any]:
    """One sweep: outcome counts, best value, its test metrics, time."""
    params, tags = sweep.data.params, sweep.data.tags
    metric = params.get("metric", STSB_DEV)
    statuses = [STATUS_NAMES.get(t.info.status, t.info.status.lower()) for t in trials]
    row: dict[str, Any] = {
        "sweep": tags.get(SWEEP_TAG, sweep.info.run_name), "method": params.get("method"),
        "space": params.get("search_space") if params.get("search_space") not in (None, "None")
        else params.get("method"), "status": sweep.info.status.lower(), "trials": len(trials),
        **{s: statuses.count(s) for s in ("finished", "pruned", "failed", "running")},
        "metric": metric, "best": _metric(sweep, f"best_{metric}"),
        "best_trial": tags.get("sentsweep.best_trial_id", ""),
    }
    if REFERENCE_TRIAL_TAG in tags:  # the paper's setting, run as a protected reference trial
        row["reference_trial"] = tags[REFERENCE_TRIAL_TAG]
    row.update({k: v for k, v in sorted(sweep.data.metrics.items())
                if k.startswith("final_") and k.endswith(SUMMARY_SUFFIXES)})
    metric_mean = f"confirmed_{metric}_mean"
    if metric_mean in sweep.data.metrics:  # the confirmation stage: the winner's seeds
        row.update(confirmed=_metric(sweep, metric_mean), confirmed_low=_metric(sweep, f"confirmed_{metric}_low"),
                   confirmed_high=_metric(sweep, f"confirmed_{metric}_high"),
                   winner_changed=tags.get(CHANGED_TAG, ""))
    row.update(wall_s=_metric(sweep, "sweep_wall_seconds"), gpu_s=_metric(sweep, "gpu_seconds"),
               run_id=sweep.info.run_id)
    return row


def trial_rows(sweep: Run, trials: list[Run]) -> list[dict[str, Any]]:
    """One row per trial: status and reason, its best dev value, test metrics, searched params, and where its
    last attempt ran (``placement``: node and Ray's GPU ids, :mod:`sentsweep.tracking.placement`)."""
    metric = sweep.data.params.get("metric", STSB_DEV)
    searched = _searched(trials)
    labelled = any(REFERENCE_TAG in t.data.tags for t in trials)
    rows = []
    for trial in trials:
        m = trial.data.metrics
        row: dict[str, Any] = {
            "sweep": sweep.data.tags.get(SWEEP_TAG, ""), "trial": trial.data.tags.get(TRIAL_ID_TAG, ""),
            "status": STATUS_NAMES.get(trial.info.status, trial.info.status.lower()),
            metric: m.get(f"best_{metric}", m.get(metric, math.nan)), "step": m.get("step", math.nan),
        }
        if labelled:  # the paper's setting, which no scheduler stops
            row["reference"] = trial.data.tags.get(REFERENCE_TAG, "")
        row.update({k: v for k, v in m.items() if k.endswith("_test") or k == "sts_avg7"})
        row.update({k: _number(trial.data.params.get(k)) for k in searched})
        row.update(wall_s=m.get("wall_seconds", math.nan), placement=placement_label(trial.data.tags),
                   reason=trial.data.tags.get(REASON_TAG, ""),
                   run_id=trial.info.run_id)
        rows.append(row)
    return rows


def sweep_runs(client: MlflowClient, experiments: Sequence[str] | None = None,
               sweeps: Sequence[str] | None = None) -> list[tuple[Run, list[Run]]]:
    """The selected sweeps' parent runs (newest first), each with its trial runs."""
    return [(sweep, trial_runs(client, sweep)) for sweep in find_sweeps(client, experiments, sweeps)]


def compare(client: MlflowClient, experiments: Sequence[str] | None = None,
            sweeps: Sequence[str] | None = None, *,
            found: Sequence[tuple[Run, list[Run]]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(sweeps table, trials table) for the selected sweeps (or for ``found``: :func:`sweep_runs`' answer);
    the confirmation table (:func:`confirmation_rows`) rides along as ``sweeps.attrs["confirmation"]``, the Pareto
    fronts of multi-objective sweeps (:func:`pareto_rows`) as ``sweeps.attrs["pareto"]``."""
    sweep_table, trial_table, confirm_table, front_table = [], [], [], []
    for sweep, trials in found if found is not None else sweep_runs(client, experiments, sweeps):
        sweep_table.append(sweep_row(sweep, trials))
        trial_table.extend(trial_rows(sweep, trials))
        stage = confirmation_run(client, sweep)
        if stage is not None:
            confirm_table.extend(confirmation_rows(sweep, stage))
        front_table.extend(pareto_rows(client, sweep))
    table = pd.DataFrame(sweep_table)
    table.attrs["confirmation"] = pd.DataFrame(confirm_table)
    table.attrs["pareto"] = pd.DataFrame(front_table)
    return table, pd.DataFrame(trial_table)


def _number(text: str | None) -> Any:
    """A param as MLflow stores it (a string), read back as a number where it is one."""
    if text is None:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def to_markdown(table: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    """``table`` (those of ``columns`` it has) as a GitHub markdown table; ``(none)`` when it is empty."""
    if table.empty:
        return "(none)"
    cols = [c for c in (columns or table.columns) if c in table.columns]
    return markdown_table(table[cols].itertuples(index=False), cols)


def render(sweeps: pd.DataFrame, trials: pd.DataFrame, fmt: str = "md") -> str:
    """Both tables as markdown sections or as CSV (trials only, one header)."""
    if fmt == "csv":
        return trials.to_csv(index=False)
    wanted = [c for c in sweeps.columns if c != "run_id"] if not sweeps.empty else []
    trial_cols = [c for c in trials.columns if c != "run_id"] if not trials.empty else []
    text = f"## Sweeps\n\n{to_markdown(sweeps, wanted)}\n\n## Trials\n\n{to_markdown(trials, trial_cols)}\n"
    confirmation = sweeps.attrs.get("confirmation")
    if confirmation is not None and not confirmation.empty:
        text += ("\n## Confirmation\n\nThe best configurations re-run with further seeds: mean, sd and 95% "
                 f"interval over their further seeds (the search's run apart: `search`).\n\n"
                 f"{to_markdown(confirmation)}\n")
    front = sweeps.attrs.get("pareto")
    if front is not None and not front.empty:
        text += ("\n## Pareto front\n\nThe finished trials no other one beats on every objective (multi-objective "
                 f"sweeps), best first objective first.\n\n{to_markdown(front)}\n")
    return text


def compare_plots(client: MlflowClient, sweeps: list[Run], out_dir: str | Path) -> list[Path]:
    """Best-so-far per sweep (by trial start) and every trial's dev curve, side by side, as PNGs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fig_best, ax_best = plt.subplots(figsize=(8, 5))
    fig_curves, ax_curves = plt.subplots(figsize=(8, 5))
    for index, sweep in enumerate(sweeps):
        name = sweep.data.tags.get(SWEEP_TAG, sweep.info.run_id[:8])
        metric = sweep.data.params.get("metric", STSB_DEV)
        better = max if sweep.data.params.get("mode", "max") == "max" else min
        trials = trial_runs(client, sweep)
        values = [t.data.metrics.get(f"best_{metric}", t.data.metrics.get(metric)) for t in trials]
        best_so_far, current = [], None
        for v in values:
            if v is not None and not math.isnan(v):
                current = v if current is None else better(current, v)
            best_so_far.append(math.nan if current is None else current)
        ax_best.plot(range(1, len(trials) + 1), best_so_far, marker="o", label=name)
        color = f"C{index % 10}"
        for trial in trials:
            history = client.get_metric_history(trial.info.run_id, metric)
            steps = sorted({(h.step, h.value) for h in history})
            style = "-" if trial.info.status == "FINISHED" else ":"
            ax_curves.plot([s for s, _ in steps], [v for _, v in steps], style, color=color, alpha=0.7)
        ax_curves.plot([], [], "-", color=color, label=name)
        ax_best.set_ylabel(f"best {metric} so far")
        ax_curves.set_ylabel(metric)
    ax_best.set_xlabel("trial")
    ax_curves.set_xlabel("step (dotted: pruned, failed or running)")
    paths = []
    for fig, ax, name in ((fig_best, ax_best, "best_so_far"), (fig_curves, ax_curves, "dev_curves")):
        if sweeps:
            ax.legend(fontsize=8)
        path = out / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
