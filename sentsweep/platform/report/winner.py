"""The sweep's winner: the Pareto front and the confirmation's intervals (plots, tags), its label, its registered
version's description and tags, and with ``reference`` the paper, our run of its setting and the winner side by side."""

from __future__ import annotations

import functools
import math
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sentsweep.platform import results as res
from sentsweep.platform.objectives import objective_values, pareto_front, select_report
from sentsweep.platform.outcome import interval
from sentsweep.platform.report.plots import TrialRecord, pyplot, save_plot
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.names import CONFIRMATION_PREFIX, SEARCH_PREFIX, figure, setting, ui_link

if TYPE_CHECKING:
    from ray.tune import Result

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.objectives import Objective
    from sentsweep.platform.outcome import Candidate, SweepOutcome


class SweepRunWrites(Protocol):
    """The parent run's writes the report makes (the driver passes its ``SweepRun``)."""

    def set_tags(self, tags: dict[str, str]) -> None: ...

    def log_artifacts(self, local_dir: str | Path, artifact_path: str) -> None: ...


def result_label(results: Iterable[Result] | None, trial_id: str, prefix: str = SEARCH_PREFIX) -> str:
    """Trial ``trial_id``'s label by the order Tune created ``results`` (Tune's id when it is not there)."""
    return res.result_labels(results, prefix).get(trial_id, trial_id)


def best_label(outcome: SweepOutcome) -> str:
    """A search trial's ``t03``, or a confirmation seed's ``c02 (a further seed of t03)``."""
    trial_id = outcome.best_trial_id or ""
    stage = outcome.confirmation
    if stage is None or stage.chosen.original:
        return result_label(outcome.results, trial_id)
    seed = result_label(stage.results, trial_id, CONFIRMATION_PREFIX)
    return f"{seed} (a further seed of {result_label(outcome.results, stage.winner.trial_id)})"


def model_version(trial: str, trial_id: str, values: Mapping[str, Any], figures: Mapping[str, float | int],
                  sweep_name: str, trial_run_id: str | None, trial_link: str | None) -> tuple[str, dict[str, str]]:
    """A registered version's description and tags: the trial, its searched ``values``, its ``figures``, its run."""
    config = ", ".join(f"{k}={setting(v)}" for k, v in values.items()) or "the sweep's defaults"
    shown = "; ".join(f"{k} {figure(v)}" for k, v in figures.items())
    where = f"[its run]({trial_link})" if trial_link else "its run"
    tags = {"trial": trial, vocab.TRIAL_ID_TAG: trial_id, "sweep": sweep_name,
            **{f"param.{k}": setting(v) for k, v in values.items()}, **{k: figure(v) for k, v in figures.items()},
            **({"trial_run_id": trial_run_id} if trial_run_id else {})}
    return (f"The best trial **{trial}** of sweep `{sweep_name}` ({where}), with {config}.\n\n"
            f"Figures: {shown or 'none recorded'}.\n\n"
            "The model was logged on the sweep's run (`best_model/`); the tags name the trial.",
            {k: str(v)[:5000] for k, v in tags.items()})


def version_about(outcome: SweepOutcome, config: SweepConfig, searched: Iterable[str]) -> tuple[str, dict[str, str]]:
    """The winner's :func:`model_version`: its dev value, test figures and confirmed interval."""
    values: dict[str, Any] = {k: outcome.best_config[k] for k in searched if k in (outcome.best_config or {})}
    figures: dict[str, float | int] = ({f"dev_{config.metric}": float(outcome.best_value)}
                                       if outcome.best_value is not None else {})
    figures.update({f"test_{k}": v for k, v in (outcome.final_metrics or {}).items()
                    if k.endswith(res.FIGURE_SUFFIXES) and math.isfinite(v)})
    summary = outcome.confirmation.winner.interval if outcome.confirmation is not None else None
    if summary is not None and summary.n:
        figures.update({f"confirmed_{config.metric}_{k}": float(getattr(summary, k))
                        for k in ("mean", "low", "high") if math.isfinite(float(getattr(summary, k)))})
        figures[f"confirmed_{config.metric}_n"] = summary.n
    run = outcome.best_run_id
    return model_version(best_label(outcome), outcome.best_trial_id or "", values, figures, outcome.sweep_name, run,
                         ui_link(outcome.tracking_uri, outcome.experiment_id, run) if run else None)


def find_reference(results: Iterable[Result], point: Mapping[str, Any]) -> Result | None:
    matches = [r for r in results if res.is_reference(r.config, point)]
    return min(matches, key=res.result_trial_id) if matches else None


def _cell(value: float | None) -> str:
    return "-" if value is None else figure(value)


def winner_cell(outcome: SweepOutcome, key: str | None) -> str:
    """The winner's figure ``key`` (None: the dev metric): the confirmation's interval, else its single value."""
    if outcome.confirmation is not None:
        runs = outcome.confirmation.winner.further_runs
        summary = interval([r.value if key is None else r.metrics.get(key, math.nan) for r in runs])
        if summary.n:
            return summary.describe()
    value = outcome.best_value if key is None else outcome.final_metrics.get(key)
    return f"{_cell(res.finite_number(value))} (1 run)"


def side_by_side(config: SweepConfig, outcome: SweepOutcome, reference: Result | None,
                 point: Mapping[str, Any]) -> list[str]:
    ref = config.reference
    ref_id = res.result_trial_id(reference) if reference is not None else None
    ref_metrics = (reference.metrics or {}) if reference is not None else {}
    rule = f"confirmation, {outcome.confirmation.rule}" if outcome.confirmation is not None else "no confirmation"

    def row(name: str, paper: str, ours: str, winner: str) -> str:
        return f"  {name:<14} {paper:>8}  {ours:>22}  {winner}"

    ours = f"trial {result_label(outcome.results, ref_id)}" if ref_id else "did not run"
    lines = [f"paper vs paper setting vs tuned winner ({ref.source or 'paper figures: none given'}):",
             row("figure", "paper", "paper setting (ours)", f"tuned winner ({rule})"),
             row("trial", "", ours, f"trial {best_label(outcome)}")]
    keys = list(ref.figures) or sorted(k for k, v in ref_metrics.items()  # the paper's, else our test figures
                                       if k.endswith(res.FIGURE_SUFFIXES) and res.finite_number(v) is not None
                                       and k != config.metric)
    lines += [row(key, _cell(ref.figures.get(key)), _cell(res.finite_number(ref_metrics.get(key))),
                  winner_cell(outcome, key)) for key in keys]
    lines.append(row(config.metric, "-", _cell(res.finite_number(ref_metrics.get(config.metric))),
                     f"{winner_cell(outcome, None)}  (dev: selection)"))
    lines.append(f"  what differs: selection on {config.metric} here; the paper's: {ref.selection or 'not given'}; "
                 "the winner was chosen on this dev set, so it is no reproduction")
    changed = {k: (v, outcome.best_config.get(k)) for k, v in point.items() if outcome.best_config.get(k) != v}
    if changed:
        lines.append("  the winner's settings against the paper's: "
                     + ", ".join(f"{k} {setting(a)} -> {setting(b)}" for k, (a, b) in changed.items()))
    return lines


def report_reference(config: SweepConfig, outcome: SweepOutcome, sweep: SweepRunWrites,
                     echo: Callable[[str], None]) -> None:
    """Echo the side-by-side lines (none without ``reference``) and put them on the sweep's run."""
    point = outcome.reference_point
    if config.reference is None or outcome.results is None or point is None:
        return
    reference = find_reference(outcome.results, point)
    lines = side_by_side(config, outcome, reference, point)
    for line in lines:
        echo(line)
    if reference is not None:
        sweep.set_tags({vocab.REFERENCE_TRIAL_TAG: res.result_trial_id(reference)})
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "side_by_side.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        sweep.log_artifacts(tmp, "reference")


def front_rows(records: Sequence[TrialRecord], objectives: Sequence[Objective]) -> list[dict[str, Any]]:
    """One row per finished trial whose objectives are all finite (the reported ones, else their value in the
    report the searcher selected), with ``on_front``; the front first, best first."""
    rows = []
    for r in (r for r in records if r.status == "finished"):
        selected = functools.reduce(lambda best, report: select_report(best, report, objectives[0]), r.reports, None)
        values = objective_values(r.metrics, objectives, selected)
        if all(v is not None and math.isfinite(v) for v in values):
            rows.append({"trial_id": r.trial_id, **{o.metric: v for o, v in zip(objectives, values, strict=True)},
                         "on_front": 0, **r.params})
    for i in pareto_front([[row[o.metric] for o in objectives] for row in rows], [o.mode for o in objectives]):
        rows[i]["on_front"] = 1
    sign = -1.0 if objectives[0].mode == "max" else 1.0
    rows.sort(key=lambda r: (-r["on_front"], sign * r[objectives[0].metric], r["trial_id"]))
    return rows


def record_front(records: Sequence[TrialRecord], config: SweepConfig, sweep: SweepRunWrites,
                 echo: Callable[[str], None]) -> None:
    """Tag, plot and echo the Pareto front of a sweep with several objectives."""
    objectives = config.objective_list
    rows = front_rows(records, objectives)
    front = [r for r in rows if r["on_front"]]
    sweep.set_tags({vocab.PARETO_TAG: ",".join(r["trial_id"] for r in front),
                    vocab.OBJECTIVES_TAG: "; ".join(str(o) for o in objectives)})
    with tempfile.TemporaryDirectory() as tmp:
        pareto_plot(rows, objectives, Path(tmp), vocab.PARETO_NAME)
        sweep.log_artifacts(tmp, vocab.PARETO_ARTIFACTS)
    echo(f"Pareto front ({' vs '.join(str(o) for o in objectives)}): {len(front)} of {len(rows)} finished trials: "
         + ", ".join(r["trial_id"] + " (" + ", ".join(f"{r[o.metric]:.4g}" for o in objectives) + ")" for r in front))


def pareto_plot(rows: Sequence[Mapping[str, Any]], objectives: Sequence[Objective], out_dir: Path,
                name: str = "pareto_front") -> list[Path]:
    """The finished trials on the second objective (x) against the first (y), the front labelled."""
    plt = pyplot()
    first, second = objectives[0], objectives[1]
    front = sorted((r for r in rows if r.get("on_front")), key=lambda r: r[second.metric])
    rest = [r for r in rows if not r.get("on_front")]
    rest_xy = [r[second.metric] for r in rest], [r[first.metric] for r in rest]
    front_xy = [r[second.metric] for r in front], [r[first.metric] for r in front]
    with plt.style.context("default"):  # Optuna's plots switch the global style to ggplot
        figure, ax = plt.subplots(figsize=(8, 5.5))
        ax.scatter(*rest_xy, s=28, color="tab:gray", alpha=0.7, label=f"finished trial, dominated ({len(rest)})",
                   zorder=2)
        if len(objectives) == 2 and len(front) > 1:
            ax.plot(*front_xy, color="tab:red", linewidth=1.2, linestyle="--", alpha=0.8, zorder=3)
        ax.scatter(*front_xy, s=60, color="tab:red", edgecolor="black", linewidth=0.6,
                   label=f"Pareto front ({len(front)}; labels: trial ids)", zorder=4)
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


def confirmation_plot(candidates: Sequence[Candidate], winner: Candidate, rule: str, metric: str,
                      out_dir: Path) -> list[Path]:
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
        return save_plot(figure, rows, out_dir, "intervals")
