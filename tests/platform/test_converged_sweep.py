"""A real toy sweep (Ray Tune, Optuna, MLflow sqlite) with ``stop_when: converged``: stopped mid-search by SIGINT,
resumed, and ended by the terminator; the count of trials started stays right, and the parent run records why."""

from __future__ import annotations

from collections import Counter

import pytest
from mlflow import MlflowClient

from sentsweep.platform.driver.budget import STOP_REASON_TAG
from sentsweep.platform.search.convergence import converged_of
from sentsweep.platform.search.searcher import TUNE_TRIAL_ATTR
from sentsweep.platform.search.study_store import load_study
from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, interrupted_sweep, toy_config


# A few minutes on a loaded 2-core machine: a toy sweep stopped at its second trial, then its resume.
@pytest.mark.slow
@pytest.mark.parametrize(("evaluator", "said", "metric"), [
    ("regret_bound", "regret bound", "converged_regret_bound"),
    ("stagnation", "the best rose by", "converged_best_rise")])
def test_a_converged_sweep_stopped_mid_search_resumes_to_the_same_count(tmp_path, tiny_bert_dir, tracking_uri,
                                                                       ray_session, evaluator, said, metric):
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import locate

    # a noise no improvement reaches: the search ends at the first check, once 4 trials finished
    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=10, max_concurrent_trials=1,
                        scheduler={"type": "fifo"}, fixed={"max_steps": 4, "sleep_s": 0.5}, time_budget_s=1200,
                        stop_when="converged", convergence={"noise_sd": 1000.0, "min_trials": 4,
                                                            "evaluator": evaluator, "patience": 2})
    started: list[str] = []
    folder = interrupted_sweep(config, 2, deadline_s=1200, echo=started.append)  # Ray starts slowly when loaded
    assert started[0].startswith(f"sweep {folder.name}: up to 10 trials of toy")
    assert converged_of(load_study(locate(str(folder)))) is None  # stopped before the terminator was asked
    lines: list[str] = []
    outcome = resume_sweep(str(folder), trainable=TOY_TRAINABLE, space=TOY_SPACE, finalize=False, preflight=False,
                           echo=lines.append)
    study = load_study(locate(str(folder)))
    decision = converged_of(study)
    assert decision is not None and decision.noise_source == "config" and decision.regret_bound < 1000.0
    # the decision was taken when the fifth trial was asked for: 4 started, and no trial after them
    assert decision.trial == 4 == len(list(outcome.results)) == sum(outcome.counts.values())
    named = Counter(t.user_attrs[TUNE_TRIAL_ATTR] for t in study.trials if TUNE_TRIAL_ATTR in t.user_attrs)
    assert len(named) == 4 and set(named.values()) == {1}  # one Optuna trial per Tune trial, across the resume
    assert [line for line in lines if line.startswith(f"search converged at trial 4: {said}")]
    parent = MlflowClient(tracking_uri=tracking_uri).get_run(outcome.parent_run_id)
    assert parent.data.tags[STOP_REASON_TAG] == decision.line()
    assert parent.data.metrics["converged_trial"] == 4 and parent.data.metrics["converged_noise_sd"] == 1000.0
    assert parent.data.metrics[metric] == pytest.approx(decision.regret_bound)
    # the stopped session's seconds count too
    assert parent.data.metrics["sweep_wall_seconds"] > outcome.wall_seconds + 1.0
