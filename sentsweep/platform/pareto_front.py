"""The Pareto front of a multi-objective sweep (``objectives:``, :mod:`.objectives`), recorded on its parent run.

After the search, every finished trial (made its final report, feasible: the trials the study was told COMPLETE with
values) gets its objectives' values from its final result, the same figures the searcher was told
(:func:`~sentsweep.platform.objectives.objective_values`); the trials no other one dominates (:mod:`.pareto`) are the
front. The parent run gets:

- the tag :data:`PARETO_TAG`: the front's trial ids, best first objective first, and :data:`OBJECTIVES_TAG`, the
  objectives as configured;
- ``pareto/pareto_front.png``: every finished trial on the first two objectives, the front highlighted and connected
  (:func:`~sentsweep.platform.plots.pareto_plot`), and ``pareto/pareto_front.csv``: every finished trial with its
  objective values, ``on_front`` (1 or 0) and its searched parameters.

``sentsweep compare`` lists the front from that CSV (:func:`sentsweep.platform.compare.pareto_rows`).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.platform.pareto import pareto_front

if TYPE_CHECKING:
    from ray.tune import ResultGrid

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.objectives import Objective
    from sentsweep.platform.sweep_tracking import SweepRun

#: The parent run's tag listing the front's trial ids (comma-separated, best first objective first).
PARETO_TAG = "sentsweep.pareto"
#: The parent run's tag with the sweep's objectives (``"stsb_dev max; compute_seconds min"``).
OBJECTIVES_TAG = "sentsweep.objectives"
#: Where the plot and its CSV go on the parent run.
PARETO_ARTIFACTS = "pareto"
#: The name of the plot and of its CSV.
PARETO_NAME = "pareto_front"


def front_rows(trials: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any]]],
               objectives: Sequence[Objective]) -> list[dict[str, Any]]:
    """One row per trial whose every objective is a finite number, given as ``(trial_id, final result, searched
    params)``: ``trial_id``, each objective's value, ``on_front`` (1 or 0), the params; the front first, each part by
    the first objective, best first."""
    from sentsweep.platform.objectives import objective_values

    rows = []
    for trial_id, result, params in trials:
        values = objective_values(result, objectives)
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


def finished_trials(results: ResultGrid, searched: Sequence[str]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The finished trials of Tune's results as :func:`front_rows` takes them."""
    from sentsweep.platform.plots import trial_status

    finished = []
    for result in results:
        metrics = dict(result.metrics or {})
        if trial_status(metrics, bool(result.error)) == "finished":
            config = result.config or {}
            finished.append((str(metrics.get("trial_id", "?")), metrics,
                             {k: config[k] for k in searched if k in config}))
    return finished


def record_front(results: ResultGrid, config: SweepConfig, sweep: SweepRun, searched: Sequence[str],
                 echo: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Tag, plot and list the front of a multi-objective sweep on its parent run (nothing for one metric); returns
    the rows (:func:`front_rows`)."""
    objectives = config.objective_list
    if not objectives:
        return []
    from sentsweep.platform.plots import pareto_plot

    rows = front_rows(finished_trials(results, searched), objectives)
    front = [r for r in rows if r["on_front"]]
    sweep.set_tags({PARETO_TAG: ",".join(r["trial_id"] for r in front),
                    OBJECTIVES_TAG: "; ".join(str(o) for o in objectives)})
    with tempfile.TemporaryDirectory() as tmp:
        pareto_plot(rows, objectives, Path(tmp), PARETO_NAME)
        sweep.log_artifacts(tmp, PARETO_ARTIFACTS)
    echo(f"Pareto front ({' vs '.join(str(o) for o in objectives)}): {len(front)} of {len(rows)} finished trials: "
         + ", ".join(r["trial_id"] + " (" + ", ".join(f"{r[o.metric]:.4g}" for o in objectives) + ")" for r in front))
    return rows
