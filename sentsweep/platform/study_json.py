"""The searcher's Optuna study as a JSON file in the sweep folder, so that plots never unpickle storage content.

:class:`~sentsweep.platform.search.PruningAwareOptunaSearch` writes ``optuna_study.json`` next to Tune's own
searcher state each time Tune saves it (:func:`write_study`); :meth:`SweepLocation.load_study
<sentsweep.platform.storage.SweepLocation.load_study>` rebuilds an in-memory study from it (:func:`study_from_json`)
with Optuna's public API: each trial's state, value, parameters with their distributions (Optuna's own JSON form),
intermediate values, constraints (an infeasible trial's: :mod:`.search`) and timestamps. Whoever can write the
bucket can make the plots wrong, not run code.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import distribution_to_json, json_to_distribution
from optuna.trial import TrialState

STUDY_FILE = "optuna_study.json"
#: Trials of these states are recorded; one still running when Tune saved is left out.
_RECORDED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


def study_to_json(study: optuna.Study) -> str:
    trials = []
    for trial in study.get_trials(deepcopy=False, states=_RECORDED):
        trials.append({
            "number": trial.number, "state": trial.state.name, "values": trial.values,
            "params": {k: trial.distributions[k].to_internal_repr(v) for k, v in trial.params.items()},
            "distributions": {k: distribution_to_json(d) for k, d in trial.distributions.items()},
            "intermediate_values": {str(step): value for step, value in trial.intermediate_values.items()},
            "user_attrs": {k: v for k, v in trial.user_attrs.items() if _is_json_scalar(v)},
            "constraints": {k: float(v) for k, v in trial.constraints.items()},
            "datetime_start": _stamp(trial.datetime_start), "datetime_complete": _stamp(trial.datetime_complete),
        })
    return json.dumps({"study_name": study.study_name, "directions": [d.name for d in study.directions],
                       "trials": trials})


def study_from_json(text: str | bytes) -> optuna.Study:
    """An in-memory study holding the trials of :func:`study_to_json`'s output."""
    data: dict[str, Any] = json.loads(text)
    directions = [optuna.study.StudyDirection[name] for name in data["directions"]]
    study = optuna.create_study(study_name=data.get("study_name"), directions=directions)
    for row in sorted(data["trials"], key=lambda r: r["number"]):
        distributions = {k: json_to_distribution(v) for k, v in row["distributions"].items()}
        trial = optuna.trial.create_trial(
            state=TrialState[row["state"]], values=row["values"],
            params={k: distributions[k].to_external_repr(v) for k, v in row["params"].items()},
            distributions=distributions,
            intermediate_values={int(step): value for step, value in row["intermediate_values"].items()},
            user_attrs={k: v for k, v in row.get("user_attrs", {}).items() if _is_json_scalar(v)},
            constraints={str(k): float(v) for k, v in row.get("constraints", {}).items()} or None,
        )
        trial.datetime_start = _parse(row.get("datetime_start")) or trial.datetime_start
        trial.datetime_complete = _parse(row.get("datetime_complete")) or trial.datetime_complete
        study.add_trial(trial)
    return study


def write_study(study: optuna.Study, folder: str | Path) -> None:
    """``optuna_study.json`` in ``folder`` (replaced whole: a reader never sees half a file)."""
    path = Path(folder) / STUDY_FILE
    partial = path.with_name(f".{STUDY_FILE}.partial")
    partial.write_text(study_to_json(study))
    os.replace(partial, path)


def _is_json_scalar(value: Any) -> bool:
    """User attributes kept in the study file: plain strings, numbers, booleans (nothing to unpickle)."""
    return isinstance(value, str | int | float | bool)


def _stamp(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _parse(value: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(value) if value else None
