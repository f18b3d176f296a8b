"""The Pareto front of a multi-objective sweep (``objectives:``, :mod:`.objectives`), recorded on its parent run.

After the search, every finished trial (made its final report, feasible: the trials the study was told COMPLETE with
values) gets its objectives' values from its final result and its selected report, the same figures the searcher was
told (:func:`~sentsweep.platform.objectives.objective_values`); the trials no other one dominates
(:mod:`.pareto`)
are the front. The parent run gets:

- the tag :data:`PARETO_TAG`: the front's trial ids, best first objective first, and :data:`OBJECTIVES_TAG`, the
  objectives as configured;
- ``pareto/pareto_front.png``: every finished trial on the first two objectives, the front highlighted and connected
  (:func:`~sentsweep.platform.report.selection_plots.pareto_plot`), and ``pareto/pareto_front.csv``: every
  finished trial with its objective values, ``on_front`` (1 or 0) and its searched parameters.

``sentsweep compare`` lists the front from that CSV (:func:`sentsweep.platform.report.compare.pareto_rows`).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.platform.objectives import pareto_front
from sentsweep.tracking.vocabulary import OBJECTIVES_TAG, PARETO_ARTIFACTS, PARETO_NAME, PARETO_TAG

if TYPE_CHECKING:
    from ray.tune import ResultGrid

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.objectives import Objective
    from sentsweep.platform.tracking.parent_run import SweepRun


#: A finished trial as :func:`front_rows` takes it: its id, its final result, its searched params and its selected
#: report (:func:`~sentsweep.platform.objectives.select_report`; None: the final result has every objective).
FinishedTrial = tuple[str, Mapping[str, Any], Mapping[str, Any], Mapping[str, Any] | None]


def front_rows(trials: Sequence[FinishedTrial], objectives: Sequence[Objective]) -> list[dict[str, Any]]:
    """One row per trial whose every objective is a finite number: ``trial_id``, each objective's value,
    ``on_front`` (1 or 0), the params; the front first, each part by the first objective, best first."""
    from sentsweep.platform.objectives import objective_values

    rows = []
    for trial_id, result, params, selected in trials:
        values = objective_values(result, objectives, selected)
        if all(v is not None and math.isfinite(v) for v in values):
            rows.append({"trial_id": trial_id, **{o.metric: v for o, v in zip(objectives, values, strict=True)},
                         **params})
    front = set(pareto_front([[row[o.metric] for o in objectives] for row in rows], [o.mode for o in objectives]))
    for i, row in enumerate(rows):
        row["on_front"] = int(i in front)
    first = objectives[0]
    sign = -1.0 if first.mode == "max" else 1.0
    rows.sort(key=lambda r: (-r["on_front"], sign * r[first.metric], r["trial_id"]))
    return [{"trial_id": r["trial_id"], **{o.metric: r[o.metric] for o in objectives}, "on_front": r["on_front"],
             **{k: v for k, v in r.items() if k not in ("trial_id", "on_front", *(o.metric for o in objectives))}}
            for r in rows]


def finished_trials(results: ResultGrid, searched: Sequence[str], first: Objective) -> list[FinishedTrial]:
    """The finished trials of Tune's results as :func:`front_rows` takes them, each with its selected report among
    its evaluation reports (the final one, which repeats the best value, left out)."""
    from sentsweep.platform.objectives import select_report
    from sentsweep.platform.report.plots import trial_status
    from sentsweep.platform.results import is_draining, is_final

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


def record_front(results: ResultGrid, config: SweepConfig, sweep: SweepRun, searched: Sequence[str],
                 echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Tag, plot and list the front of a multi-objective sweep on its parent run (nothing for one metric); returns
    the rows (:func:`front_rows`)."""
    objectives = config.objective_list
    if not objectives:
        return []
    from sentsweep.platform.report.selection_plots import pareto_plot

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
