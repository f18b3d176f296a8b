"""TPE's start-up under concurrency (sentsweep.platform.search.samplers.build_sampler): it counts finished trials, so
the
first ``max_concurrent_trials`` suggestions are random and TPE begins once ``startup_trials`` trials have finished,
running ones (constant liar) or not. Real Optuna, no Ray."""

from __future__ import annotations

from collections import deque

import optuna
import pytest
from optuna.trial import TrialState

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.search.samplers import OPTUNA_STARTUP_TRIALS, build_sampler, random_suggestions
from tests.platform.tpe_spy import model_made


def _space(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", 0.0, 1.0)
    pooling = trial.suggest_categorical("pooling", ["mean", "cls"])
    return x + (0.5 if pooling == "mean" else 0.0)


def _config(concurrent: int, startup: int | None = 3, samples: int = 40) -> SweepConfig:
    return SweepConfig(name="s", method="toy", seed=7, metric="score", num_samples=samples,
                       max_concurrent_trials=concurrent, startup_trials=startup)


def _study(config: SweepConfig) -> optuna.Study:
    sampler = build_sampler(config)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    _MADE[study.study_name] = model_made(sampler)
    return study


#: Each study's trials that TPE's model made, by the study's name.
_MADE: dict[str, set[int]] = {}


def _ask(study: optuna.Study) -> tuple[optuna.Trial, float, bool]:
    """A suggestion, its objective value, and whether TPE's model made it."""
    trial = study.ask()
    value = _space(trial)
    return trial, value, trial.number in _MADE[study.study_name]


def _random_before_model(config: SweepConfig, *, at_once: bool) -> int:
    """Suggestions made before TPE's first model-made one: ``max_concurrent_trials`` asked at the start (as Tune
    fills its free slots), then one each time the oldest running trial ends or, ``at_once``, every running one."""
    study, running, made = _study(config), deque(), 0
    asks = config.max_concurrent_trials
    while True:
        for _ in range(asks):
            trial, value, by_model = _ask(study)
            if by_model:
                return made
            made += 1
            running.append((trial, value))
        for _ in range(len(running) if at_once else 1):
            study.tell(*running.popleft())
        asks = 1


def test_no_suggestion_is_the_model_s_before_startup_trials_have_finished_whatever_is_running() -> None:
    config = _config(concurrent=4, startup=3)
    study = _study(config)
    asked = [_ask(study) for _ in range(4)]  # four running, none finished
    assert [by_model for _, _, by_model in asked] == [False] * 4
    study.tell(asked[0][0], asked[0][1])
    study.tell(asked[1][0], state=TrialState.PRUNED)  # a pruned trial counts as finished too
    assert not _ask(study)[2]  # two finished: still random
    study.tell(asked[2][0], asked[2][1])
    assert _ask(study)[2]  # three finished, three running (lies): TPE's model


@pytest.mark.parametrize(("concurrent", "startup"), [(4, 3), (16, None), (2, 3), (1, 5)])
def test_the_random_phase_under_concurrency_is_what_random_suggestions_says(concurrent: int,
                                                                           startup: int | None) -> None:
    config = _config(concurrent, startup)
    fewest, most = random_suggestions(config)
    assert _random_before_model(config, at_once=False) == most
    assert _random_before_model(config, at_once=True) == fewest
    assert most == (startup or OPTUNA_STARTUP_TRIALS) + concurrent - 1


def test_the_default_start_up_is_optuna_s_and_the_phase_is_capped_by_the_sweep() -> None:
    assert OPTUNA_STARTUP_TRIALS == 10
    assert random_suggestions(_config(16, None, samples=500)) == (16, 25)
    assert random_suggestions(_config(16, None, samples=20)) == (16, 20)
    assert random_suggestions(_config(2, 3, samples=8)) == (3, 4)


def test_the_noise_replicas_take_no_random_draw_s_place_in_the_start_up() -> None:
    """With ``stop_when: converged`` the first point runs again with two noise seeds. The first point counts in
    ``startup_trials`` as in any sweep; its replicas do not, so the random draws are as many as without them."""
    from sentsweep.platform.search.searcher import build_searcher

    def space(trial: optuna.Trial) -> None:
        trial.suggest_float("x", 0.0, 1.0)
        trial.suggest_categorical("pooling", ["mean", "cls"])

    config = SweepConfig(name="s", method="toy", seed=7, metric="score", num_samples=40, max_concurrent_trials=1,
                         startup_trials=3, stop_when="converged", convergence={"noise_sd": None, "noise_seeds": 2,
                                                                              "min_trials": 30})
    searcher = build_searcher(config, space, [{"x": 0.5, "pooling": "mean"}])
    made = model_made(searcher.sampler)
    by_model = []
    for i in range(8):
        searcher.suggest(f"t{i}")
        by_model.append(searcher.running()[f"t{i}"] in made)
        searcher.on_trial_complete(f"t{i}", {"score": float(i), "training_iteration": 1, "final": True})
    # the first point, its two replicas, two random draws (3 - the first point), then the model
    assert by_model == [False] * 5 + [True] * 3
