"""The confirmation stage: the figures (mean, standard deviation, t interval), the rule, the seed whose weights are
used, and one small real sweep with confirmation on the toy (2 configurations x 2 further seeds)."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.platform.confirmation_stats import (
    Candidate,
    SeedRun,
    choose_winner,
    further_seeds,
    interval,
    ranked_by_rule,
    t_quantile,
)
from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, PARENT_TAG, ROLE_TAG


def _candidate(rank: int, values: list[float]) -> Candidate:
    runs = [SeedRun(f"t{rank}-{i}", i, v, original=i == 0) for i, v in enumerate(values)]
    return Candidate(rank, f"t{rank}-0", {"lr": rank}, runs)


def test_interval_is_the_t_interval_of_the_mean():
    values = [80.0, 81.0, 79.0, 82.0]
    iv = interval(values)
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert iv.n == 4 and iv.mean == pytest.approx(80.5) and iv.std == pytest.approx(sd)
    half = 3.182446305284263 * sd / 2  # t(0.975, 3), from the table
    assert (iv.low, iv.high) == (pytest.approx(mean - half), pytest.approx(mean + half))
    assert t_quantile(0.95, 1) == pytest.approx(12.706204736)


def test_interval_edge_cases():
    assert interval([]).n == 0 and math.isnan(interval([]).mean)
    one = interval([70.0])
    assert one.n == 1 and one.mean == 70.0 and one.low == -math.inf and one.high == math.inf
    nan_dropped = interval([70.0, float("nan"), 72.0])
    assert nan_dropped.n == 2 and nan_dropped.mean == 71.0


def test_the_rules_choose_differently_when_the_best_mean_is_the_least_certain():
    lucky = _candidate(1, [84.0, 76.0, 83.0])  # mean 81, wide
    steady = _candidate(2, [80.4, 80.6, 80.5])  # mean 80.5, narrow
    assert choose_winner([lucky, steady], "mean", "max") is lucky
    assert choose_winner([lucky, steady], "lower_bound", "max") is steady
    assert [c.rank for c in ranked_by_rule([lucky, steady], "lower_bound", "max")] == [2, 1]
    # minimising: the pessimistic end is the upper one
    low_loss, risky = _candidate(1, [0.20, 0.21, 0.19]), _candidate(2, [0.10, 0.40, 0.05])
    assert choose_winner([low_loss, risky], "lower_bound", "min") is low_loss
    assert choose_winner([low_loss, risky], "mean", "min") is risky


def test_ties_go_to_the_higher_single_seed_rank():
    a, b = _candidate(2, [80.0, 80.0]), _candidate(1, [80.0, 80.0])
    assert choose_winner([a, b], "mean", "max") is b


def test_the_representative_seed_is_closest_to_the_mean():
    c = _candidate(1, [85.0, 80.0, 81.0, 79.0])  # mean 81.25
    assert c.representative().value == 81.0
    tie = _candidate(1, [80.0, 82.0, 81.0 + 1e-12, 81.0])  # the original run wins a tie only when it is one
    assert tie.representative().value == pytest.approx(81.0)
    failed = _candidate(1, [80.0, float("nan"), 82.0])
    assert math.isfinite(failed.representative().value)


def test_further_seeds():
    assert further_seeds(0, 3) == [1, 2, 3]
    assert further_seeds(42, 2, taken=[43]) == [44, 45]


class _Planted:
    """Unpickled, it creates the file ``path`` (what a planted ``tuner.pkl`` could do: run any code)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple:
        return (open, (self.path, "w"))


# About 60-90 s on a loaded 2-core machine: the search (3 trials) and the stage (4 trials); in `make test` all the
# same (the only run of the whole stage there).
def test_sweep_with_confirmation(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from sentsweep.platform.compare import compare, render
    from sentsweep.platform.confirmation import read_state
    from sentsweep.platform.confirmation_stats import CHANGED_TAG, STATE_FILE
    from sentsweep.platform.export import BEST_WEIGHTS, has_artifact
    from sentsweep.platform.storage import locate
    from sentsweep.platform.sweep import run_sweep
    from tests.platform.sweep_toy import TOY_SPACE, TOY_TRAINABLE, toy_config

    config = toy_config(tmp_path, tiny_bert_dir, tracking_uri, num_samples=3, scheduler={"type": "fifo"},
                        fixed={"max_steps": 4}, confirm={"top_k": 2, "seeds": 2}, plots=False, export=False)
    lines: list[str] = []
    marker = tmp_path / "code-ran"

    def echo(line: str) -> None:  # once the folder exists, someone with the storage's keys plants a Tune state
        lines.append(line)
        if len(lines) == 1:
            folder = Path(line.split("; folder ", 1)[1].split(";", 1)[0])
            (folder / "confirmation").mkdir(parents=True)
            (folder / "confirmation" / "tuner.pkl").write_bytes(pickle.dumps(_Planted(str(marker))))

    outcome = run_sweep(config, trainable=TOY_TRAINABLE, space=TOY_SPACE, echo=echo)
    assert not marker.exists(), "a fresh sweep restored (unpickled) a Tune state planted in its folder"
    stage = outcome.confirmation
    assert stage is not None and [c.rank for c in stage.candidates] == [1, 2]
    for candidate in stage.candidates:
        assert [r.seed for r in candidate.runs] == [3, 4, 5]  # the sweep's seed, then two further ones
        assert candidate.interval.n == 3
    assert stage.chosen in stage.winner.runs
    assert outcome.best_trial_id == stage.chosen.trial_id
    state = read_state(locate(outcome.sweep_dir))
    assert state["status"] == "done" and state["chosen"] == stage.chosen.trial_id
    client = MlflowClient(tracking_uri=tracking_uri)
    (run,) = client.search_runs([outcome.experiment_id], f"tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'")
    assert run.data.tags[PARENT_TAG] == outcome.parent_run_id and run.info.status == "FINISHED"
    children = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{run.info.run_id}'")
    assert len(children) == 4 and all(c.info.status == "FINISHED" for c in children)
    assert {"r1_mean", "r1_low", "r2_high"} <= set(run.data.metrics)
    parent = client.get_run(outcome.parent_run_id)
    assert parent.data.metrics["confirmed_stsb_dev_mean"] == pytest.approx(stage.winner.interval.mean)
    assert parent.data.tags[CHANGED_TAG] == str(stage.changed).lower()
    assert "confirmation/seeds.csv" in {f.path for f in client.list_artifacts(outcome.parent_run_id, "confirmation")}
    # export is off: the chosen seed's own run gets the weights (a seed of the stage's: under the stage's run)
    assert outcome.best_run_id is not None and has_artifact(client, outcome.best_run_id, BEST_WEIGHTS)
    assert any(line.startswith("confirmed winner") for line in lines)
    sweeps, trials = compare(client)
    assert len(trials) == 3  # the search's trials only
    assert "## Confirmation" in render(sweeps, trials) and len(sweeps.attrs["confirmation"]) == 2
    assert STATE_FILE in locate(outcome.sweep_dir).list(".json")
