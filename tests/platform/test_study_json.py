"""The searcher's study round-trips through JSON (what the plots read instead of unpickling storage content)."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from sentsweep.platform.storage import locate
from sentsweep.platform.study_json import STUDY_FILE, study_from_json, study_to_json, write_study


def _study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    for number, state in enumerate([TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.COMPLETE]):
        trial = study.ask()
        trial.suggest_float("lr", 1e-5, 1e-3, log=True)
        trial.suggest_categorical("pooling", ["mean", "cls", None])
        trial.suggest_int("batch_size", 16, 64, step=16)
        trial.report(0.5 + number, 1)
        study.tell(trial, 80.0 + number if state == TrialState.COMPLETE else None, state=state)
    study.ask()  # one still running: left out
    return study


def test_the_study_round_trips_through_json(tmp_path) -> None:
    study = _study()
    again = study_from_json(study_to_json(study))
    assert [t.state for t in again.trials] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL,
                                               TrialState.COMPLETE]
    for before, after in zip(study.trials, again.trials, strict=False):
        assert after.params == before.params and after.distributions == before.distributions
        assert after.intermediate_values == before.intermediate_values and after.values == before.values
    assert again.best_value == 83.0 and again.direction == study.direction


def test_a_sweep_folder_loads_the_json_study(tmp_path) -> None:
    location = locate(str(tmp_path / "sweep"))
    assert location.load_study() is None
    (tmp_path / "sweep").mkdir()
    write_study(_study(), tmp_path / "sweep")
    assert {STUDY_FILE} == set(location.list())
    assert len(location.load_study().trials) == 4
