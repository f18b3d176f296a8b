"""``stop_when: converged``: the terminator's regret bound against the seed noise
(sentsweep.platform.search.convergence), with a fake evaluator, and the searcher that ends the search on it (pickled
and restored as a resume does)."""

from __future__ import annotations

import dataclasses
import pickle

import optuna
import pytest
from optuna.trial import TrialState, create_trial
from ray.tune.search import Searcher

from sentsweep.platform.config import ConvergenceConfig, SweepConfig
from sentsweep.platform.results import FINAL_KEY
from sentsweep.platform.search.convergence import (
    CONVERGED_ATTR,
    NOISE_SEED_ATTR,
    Converged,
    ConvergenceCheck,
    converged_of,
    measured_noise,
    record_convergence,
    replica_points,
)
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.platform.search.study_store import StudyStore
from sentsweep.tracking.vocabulary import STOP_REASON_TAG

X = optuna.distributions.FloatDistribution(0.0, 1.0)


class FakeBound:
    """A regret bound that says ``bound`` and records the trials it was given."""

    def __init__(self, bound: float) -> None:
        self.bound = bound
        self.seen: list[int] = []

    def evaluate(self, trials, study_direction):
        self.seen.append(len(trials))
        return self.bound


def _trial(x: float, value: float | None, state=TrialState.COMPLETE, steps=None, **attrs):
    return create_trial(params={"x": x}, distributions={"x": X}, value=value, state=state,
                        intermediate_values=steps or {}, user_attrs=attrs)


def test_replica_seeds_stay_clear_of_the_confirmation_stages():
    replicas = replica_points({"lr": 0.1}, ConvergenceConfig(noise_seeds=3), 42)
    assert [attrs[NOISE_SEED_ATTR] for _, attrs in replicas] == [1043, 1044, 1045]


def test_noise_is_the_sd_of_the_first_points_runs_at_their_last_common_step():
    trials = [_trial(0.5, 87.0, steps={1: 80.0, 2: 86.0, 3: 87.0}),
              _trial(0.2, 70.0),  # another point: not part of the noise
              _trial(0.5, None, TrialState.PRUNED, steps={1: 81.0, 2: 86.4}, **{NOISE_SEED_ATTR: 1043}),
              _trial(0.5, 86.9, steps={1: 79.0, 2: 85.6, 3: 86.9}, **{NOISE_SEED_ATTR: 1044})]
    assert measured_noise(trials) == pytest.approx(0.4)  # sd of 86.0, 86.4, 85.6 at step 2
    assert measured_noise(trials[:2]) is None  # no replica yet
    assert measured_noise(trials[:1] + [_trial(0.5, None, TrialState.RUNNING, **{NOISE_SEED_ATTR: 1043})]) is None


def test_the_noise_of_finished_runs_is_the_sd_of_their_values_the_unit_the_improvement_is_measured_in():
    """Each run's value is the best dev value it kept, as every trial's that the regret bound and the stagnation
    rule compare; curves that peak before their end give another sd at their last step."""
    trials = [_trial(0.5, 86.0, steps={1: 86.0, 2: 85.0}),
              _trial(0.5, 86.4, steps={1: 86.4, 2: 84.0}, **{NOISE_SEED_ATTR: 1043}),
              _trial(0.5, 85.6, steps={1: 85.6, 2: 85.0}, **{NOISE_SEED_ATTR: 1044})]
    assert measured_noise(trials) == pytest.approx(0.4)  # sd of 86.0, 86.4, 85.6; at step 2 it would be 0.577


def test_the_check_waits_for_min_trials_and_the_noise_then_compares_the_bound():
    settings = ConvergenceConfig(min_trials=3)
    fake = FakeBound(0.1)
    check = ConvergenceCheck(settings, "maximize", evaluator=lambda: fake)
    first = _trial(0.5, 87.0, steps={1: 87.0})
    replica = _trial(0.5, 86.6, steps={1: 86.6}, **{NOISE_SEED_ATTR: 1043})
    assert check.check([first, _trial(0.1, 80.0)], started=2) is None and fake.seen == []  # 2 < min_trials
    assert check.check([first, _trial(0.1, 80.0), _trial(0.9, 81.0)], started=3) is None  # no noise yet
    infeasible = _trial(0.3, 10.0)
    infeasible.set_constraint("diverged", 1.0)
    trials = [first, replica, _trial(0.1, 80.0), infeasible, _trial(0.7, None, TrialState.PRUNED, steps={1: 70.0})]
    assert check.check(trials, started=6) is None and fake.seen == []  # 2 search trials: a replica does not count
    trials.append(_trial(0.9, 81.0))
    decision = check.check(trials, started=7)
    assert fake.seen == [4]  # finished and feasible, the replica too: the pruned and infeasible trials are left out
    assert decision == Converged(7, 3, 0.1, pytest.approx(0.2828, abs=1e-4), "measured", "FakeBound")
    assert ConvergenceCheck(settings, "maximize", evaluator=lambda: FakeBound(0.3)).check(trials, 6) is None
    given = ConvergenceCheck(ConvergenceConfig(min_trials=3, noise_sd=0.5), "maximize",
                             evaluator=lambda: FakeBound(0.3)).check([first, _trial(0.1, 80.0), _trial(0.9, 1.0)], 3)
    assert given is not None and (given.noise_sd, given.noise_source) == (0.5, "config")


def test_optunas_regret_bound_is_the_default_evaluator_and_emmr_the_other():
    trials = [_trial(x / 20, 80 + 5 * (x / 20)) for x in range(20)]
    decision = ConvergenceCheck(ConvergenceConfig(noise_sd=100.0), "maximize").check(trials, 20)
    assert decision is not None and decision.evaluator == "RegretBoundEvaluator" and decision.regret_bound < 100
    emmr = ConvergenceCheck(ConvergenceConfig(noise_sd=100.0, evaluator="emmr"), "maximize").check(trials, 20)
    assert emmr is not None and emmr.evaluator == "EMMREvaluator" and emmr.regret_bound < 100


def space(trial):
    trial.suggest_float("x", 0.0, 1.0)


def _config(**convergence):
    return SweepConfig(name="s", method="toy", seed=3, metric="score", startup_trials=2, stop_when="converged",
                       fixed={"seed": 7}, convergence=ConvergenceConfig(**{"min_trials": 4, **convergence}))


def _finish(searcher, trial_id, value):
    searcher.on_trial_result(trial_id, {"score": value, "training_iteration": 1})
    searcher.on_trial_complete(trial_id, {"score": value, "training_iteration": 2, FINAL_KEY: 1.0})


def test_the_searcher_reruns_the_first_point_with_further_seeds_then_ends_when_converged(tmp_path):
    store = StudyStore(str(tmp_path))
    searcher = build_searcher(_config(), space, [{"x": 0.5}], store=store, study_name="s")
    searcher.convergence.evaluator = lambda: FakeBound(0.05)
    suggested = [searcher.suggest(f"t{i}") for i in range(3)]
    assert suggested == [{"x": 0.5}, {"x": 0.5, "seed": 1008}, {"x": 0.5, "seed": 1009}]
    for i, value in enumerate((87.0, 87.2, 86.8)):
        _finish(searcher, f"t{i}", value)
    for i, value in ((3, 60.0), (4, 61.0)):  # 1, then 2 and 3 search trials < min_trials 4: the replicas never count
        assert searcher.suggest(f"t{i}") not in (None, Searcher.FINISHED)
        _finish(searcher, f"t{i}", value)
    assert searcher.suggest("t5") not in (None, Searcher.FINISHED)
    _finish(searcher, "t5", 62.0)
    assert searcher.suggest("t6") == Searcher.FINISHED  # 4 search trials; bound 0.05 < noise sd 0.2
    decision = converged_of(searcher.study)
    assert decision.trial == 6 and decision.finished == 4 and decision.noise_sd == pytest.approx(0.2)
    searcher.convergence.evaluator = None  # a fake is no part of what Tune pickles
    restored = pickle.loads(pickle.dumps(searcher))  # a resume: the decision is read back from the journal
    restored.convergence.evaluator = lambda: FakeBound(10.0)
    assert restored.suggest("t7") == Searcher.FINISHED
    assert CONVERGED_ATTR in restored.study.user_attrs


def test_without_converged_nothing_is_queued_or_checked():
    config = SweepConfig(name="s", method="toy", metric="score")
    searcher = build_searcher(config, space, [{"x": 0.5}])
    assert searcher.convergence is None
    assert searcher.suggest("t0") == {"x": 0.5} and "seed" not in searcher.suggest("t1")
    given = build_searcher(_config(noise_sd=0.3), space, [{"x": 0.5}])
    assert given.suggest("t0") == {"x": 0.5} and "seed" not in given.suggest("t1")  # noise given: no replicas


def test_the_parent_run_records_why_the_search_stopped():
    study = optuna.create_study(direction="maximize")
    tags, metrics, lines = {}, {}, []
    assert record_convergence(study, tags.update, metrics.update, lines.append) is None and not tags
    decision = Converged(12, 9, 0.11, 0.25, "measured", "RegretBoundEvaluator")
    study.set_user_attr(CONVERGED_ATTR, dataclasses.asdict(decision))
    assert record_convergence(study, tags.update, metrics.update, lines.append) == decision
    assert lines == [decision.line()] and lines[0].startswith("search converged at trial 12: regret bound 0.11 <")
    assert tags[STOP_REASON_TAG] == decision.line() and tags["sentsweep.converged.noise_source"] == "measured"
    assert metrics == {"converged_trial": 12.0, "converged_finished_trials": 9.0, "converged_regret_bound": 0.11,
                       "converged_noise_sd": 0.25}


@pytest.mark.parametrize("bad", [{"noise_sd": 0}, {"noise_seeds": 0}, {"min_trials": 1}, {"patience": 0},
                                 {"evaluator": "patience"}])
def test_bad_convergence_settings_name_the_field(bad):
    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import parse_sweep_config

    with pytest.raises(ConfigError, match=f"convergence.{next(iter(bad))}"):
        parse_sweep_config({"name": "s", "method": "toy", "stop_when": "converged", "convergence": bad})


def test_the_stagnation_rule_is_the_rise_of_the_best_over_the_last_patience_trials():
    from optuna.study import StudyDirection

    from sentsweep.platform.search.convergence import StagnationEvaluator

    rule = StagnationEvaluator(patience=2)
    pruned = _trial(0.4, None, TrialState.PRUNED, steps={1: 84.0, 2: 83.0})  # a pruned trial counts by its best
    trials = [_trial(0.1, 80.0), pruned, _trial(0.2, 84.5, steps={1: 81.0}), _trial(0.3, 82.0)]
    assert rule.evaluate(trials, StudyDirection.MAXIMIZE) == pytest.approx(0.5)  # 84.5 over the pruned 84.0
    assert rule.evaluate(trials + [_trial(0.5, 84.7)], StudyDirection.MAXIMIZE) == pytest.approx(0.2)
    assert rule.evaluate([*trials[:2], _trial(0.6, 70.0)], StudyDirection.MINIMIZE) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="more than 2 trials"):
        rule.evaluate(trials[:2], StudyDirection.MAXIMIZE)


def test_the_stagnation_check_counts_ended_search_trials_and_records_its_patience():
    settings = ConvergenceConfig(evaluator="stagnation", patience=3, min_trials=4, noise_sd=1.0)
    check = ConvergenceCheck(settings, "maximize")
    replica = _trial(0.5, 95.0, **{NOISE_SEED_ATTR: 1043})  # the first point again: no search trial
    trials = [_trial(0.5, 80.0), replica, _trial(0.1, 85.0), _trial(0.2, None, TrialState.PRUNED, steps={1: 85.5}),
              _trial(0.3, None, TrialState.RUNNING, steps={1: 99.0})]
    for number, trial in enumerate(trials):
        trial.number = number
    assert check.check(trials, started=5) is None  # 3 ended search trials < min_trials 4
    trials += [_trial(0.4, 84.0), _trial(0.6, 85.9)]
    trials[-2].number, trials[-1].number = 5, 6
    decision = check.check(trials, started=7)  # 85.0 -> 85.9 over the last 3 of 5 ended: 0.9 < 1.0
    assert decision == Converged(7, 5, pytest.approx(0.9), 1.0, "config", "StagnationEvaluator", 3)
    assert decision.line().startswith("search converged at trial 7: the best rose by 0.9 over the last 3 of 5 "
                                      "ended trials, < noise sd 1 (config)")
    assert decision.metrics() == {"converged_trial": 7.0, "converged_finished_trials": 5.0,
                                  "converged_best_rise": pytest.approx(0.9), "converged_noise_sd": 1.0,
                                  "converged_patience": 3.0}
    trials[-1] = _trial(0.6, 86.1)
    trials[-1].number = 6
    assert check.check(trials, started=7) is None  # a rise of 1.1 is above the noise



def test_the_stagnation_rule_waits_for_patience_trials_of_its_own_after_a_warm_start():
    from sentsweep.platform.results import WARM_START_ATTR

    check = ConvergenceCheck(ConvergenceConfig(evaluator="stagnation", patience=3, min_trials=2, noise_sd=1.0),
                             "maximize")
    earlier = [_trial(x / 10, 80.0 + x, **{WARM_START_ATTR: "sweep-1"}) for x in range(5)]  # best 84.0
    own = [_trial(0.05, 83.0), _trial(0.15, 84.5)]
    trials = earlier + own
    for number, trial in enumerate(trials):
        trial.number = number
    assert check.check(trials, started=2) is None  # 2 of its own < patience 3, however flat
    trials.append(_trial(0.25, 82.0))
    trials[-1].number = 7
    decision = check.check(trials, started=3)  # its 3 trials rose 0.5 above the warm start's best
    assert decision is not None and decision.regret_bound == pytest.approx(0.5) and decision.finished == 8


def test_a_searcher_with_the_stagnation_rule_ends_once_the_best_stopped_rising(tmp_path):
    searcher = build_searcher(_config(evaluator="stagnation", patience=3, noise_sd=0.5), space, [{"x": 0.5}],
                              store=StudyStore(str(tmp_path)), study_name="s")
    for i, value in enumerate((80.0, 86.0, 85.0, 86.2)):
        assert searcher.suggest(f"t{i}") not in (None, Searcher.FINISHED)
        _finish(searcher, f"t{i}", value)
    assert searcher.suggest("t4") not in (None, Searcher.FINISHED)  # 80 -> 86.2 over the last 3: above the noise
    _finish(searcher, "t4", 70.0)
    assert searcher.suggest("t5") == Searcher.FINISHED  # 86.0 -> 86.2 over the last 3 of 5
    decision = converged_of(pickle.loads(pickle.dumps(searcher)).study)
    assert (decision.trial, decision.finished, decision.patience) == (5, 5, 3)
    assert decision.regret_bound == pytest.approx(0.2)


def test_a_trial_without_a_value_does_not_count_towards_the_stagnation_window():
    from sentsweep.platform.results import WARM_START_ATTR

    check = ConvergenceCheck(ConvergenceConfig(evaluator="stagnation", patience=3, min_trials=2, noise_sd=2.0),
                             "maximize")
    earlier = [_trial(x / 10, 80.0 + x, **{WARM_START_ATTR: "sweep-1"}) for x in range(5)]
    own = [_trial(0.05, 83.0), _trial(0.15, None, TrialState.PRUNED), _trial(0.25, 82.0)]  # one pruned at once
    trials = earlier + own
    for number, trial in enumerate(trials):
        trial.number = number
    assert check.check(trials, started=3) is None  # two of its own have a value: fewer than patience 3


def test_converged_with_several_objectives_is_refused_naming_the_field():
    from sentsweep.errors import ConfigError
    from sentsweep.platform.config import parse_sweep_config

    with pytest.raises(ConfigError, match="stop_when.*one objective"):
        parse_sweep_config({"name": "s", "method": "cosent", "stop_when": "converged",
                            "objectives": ["stsb_dev max", "compute_seconds min"]})


def test_a_warm_started_sweep_measures_the_noise_when_the_first_point_ran_in_the_earlier_sweep(tmp_path):
    from sentsweep.platform.results import WARM_START_ATTR

    # the earlier sweep's trials as load_history gives them: its first point among them, no replica marked
    history = [_trial(0.5, 87.0, steps={1: 87.0}, **{WARM_START_ATTR: "sweep-1"}),
               _trial(0.2, 80.0, steps={1: 80.0}, **{WARM_START_ATTR: "sweep-1"})]
    searcher = build_searcher(_config(min_trials=2), space, [{"x": 0.5}], store=StudyStore(str(tmp_path)),
                              study_name="s", history=history)
    searcher.convergence.evaluator = lambda: FakeBound(0.05)
    suggested = [searcher.suggest(f"t{i}") for i in range(2)]
    assert suggested == [{"x": 0.5, "seed": 1008}, {"x": 0.5, "seed": 1009}]  # the first point's replicas first
    for i, value in enumerate((87.2, 86.8)):
        _finish(searcher, f"t{i}", value)
    assert searcher.suggest("t2") == Searcher.FINISHED  # noise sd 0.2 from the earlier run and its 2 replicas
    assert converged_of(searcher.study).noise_source == "measured"


def test_a_measured_noise_of_zero_is_said_once_since_nothing_can_converge_below_it(caplog):
    """Replicas that score exactly as the first point leave no improvement below the noise: the sweep says so once,
    and that setting ``convergence.noise_sd`` lets it stop."""
    check = ConvergenceCheck(ConvergenceConfig(min_trials=2), "maximize", evaluator=lambda: FakeBound(0.0))
    trials = [_trial(0.5, 87.0, steps={1: 87.0}), _trial(0.5, 87.0, steps={1: 87.0}, **{NOISE_SEED_ATTR: 1043}),
              _trial(0.1, 80.0)]
    with caplog.at_level("WARNING", logger="sentsweep.platform.search.convergence"):
        assert check.check(trials, started=3) is None
        assert check.check(trials, started=4) is None
    assert [r.getMessage() for r in caplog.records if "noise sd is 0" in r.getMessage()] == [
        "stop_when converged: the first point's runs with further seeds scored the same, so the measured noise sd "
        "is 0 and no improvement can be below it; the search runs to num_samples unless convergence.noise_sd is set"]
