"""The sampler and ``stop_when: converged`` study (bench/search_converged.py) on the tiny synthetic table of
test_search_table: no training; the sweep's own searcher, its samplers and its convergence check."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest

from bench.search_converged import bound_rows, converged_rows, interval, measure, prefix, sampler_rows, strategies
from bench.search_replay import ReplaySpace, SearchSettings, replay
from tests.bench.test_search_table import table, table_path  # noqa: F401 - the shared fixtures

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_interval_takes_values_and_keeps_inf():
    assert interval([1.0, 2.0, 3.0, math.inf]) == (1.0, 2.0, math.inf)


def test_the_fixed_budget_is_the_prefix_of_the_capped_replay(table) -> None:  # noqa: F811
    random = strategies(["random"])[1]
    capped = replay(table, random, seed=2, cap_s=1000.0)
    short = replay(table, random, seed=2, cap_s=1000.0, num_samples=5)
    assert short.runs == capped.runs[:5]
    assert prefix(capped, table, 5) == (pytest.approx(short.spent[-1]), short.incumbent[-1])


def test_a_converged_replay_stops_early_and_its_figures_are_read_per_seed(table) -> None:  # noqa: F811
    space = ReplaySpace(table)
    settings = SearchSettings(min_trials=4)
    tpe_asha, tpe = strategies(["tpe"])
    stopped = replay(table, tpe, 0, cap_s=1000.0, settings=SearchSettings(min_trials=4, noise_sd=5.0), space=space,
                     num_samples=32)
    assert stopped.finished_by_searcher and 4 <= stopped.trials < 32  # a large noise: it ends soon after 4
    figures = measure(table, tpe, repeats=3, noise_sd=5.0, num_samples=32, settings=settings, cap_s=1000.0,
                      space=space)
    assert all(figures.converged_by_check) and (figures.saved() > 0).all()
    assert np.all(np.asarray(figures.converged_spent) < np.asarray(figures.fixed_spent))
    rows = converged_rows([figures], 5.0)
    assert rows[0][0] == "tpe" and rows[0][3] == "100%"
    kept = np.asarray(figures.converged_regret) - np.asarray(figures.fixed_regret) <= 5.0
    assert rows[0][-1] == f"{kept.mean():.0%}"
    ref = measure(table, strategies(["random"])[1], repeats=3, noise_sd=5.0, num_samples=32, settings=settings,
                  cap_s=1000.0, space=space)
    assert sampler_rows([figures, ref])[1][3] == "1.00x"  # random search is its own reference


def test_the_oracle_stops_each_seed_where_it_first_came_within_the_noise(table) -> None:  # noqa: F811
    space = ReplaySpace(table)
    random = strategies(["random"])[1]
    figures = measure(table, random, repeats=4, noise_sd=1.0, num_samples=12, settings=SearchSettings(min_trials=4),
                      cap_s=1000.0, space=space)
    target = table.best - 1.0
    for seed, saved in enumerate(figures.oracle_saved(target)):
        capped = replay(table, random, seed, cap_s=1000.0, space=space)
        fixed_spent, _ = prefix(capped, table, 12)
        hit = next((k for k in range(1, 13) if prefix(capped, table, k)[1] >= target), None)
        expected = 0.0 if hit is None else 1 - prefix(capped, table, hit)[0] / fixed_spent
        assert saved == pytest.approx(expected)
    common = figures.common_stop(target, share=0.5)
    if common is not None:
        trials, _ = common
        assert figures.within_at(trials, target).mean() >= 0.5
        assert trials == 1 or figures.within_at(trials - 1, target).mean() < 0.5
    assert figures.common_stop(target + 100.0) is None  # nothing reaches an unreachable target
    row = bound_rows([figures], target + 100.0)[0]
    assert row[1] == "0%" and row[2] == "0% / 0%" and row[3].startswith("none")


def test_the_stagnation_rule_replays_with_its_patience_and_names_its_rows(table) -> None:  # noqa: F811
    space = ReplaySpace(table)
    tpe_asha = strategies(["tpe"])[0]
    settings = SearchSettings(min_trials=4, evaluator="stagnation", patience=3)
    # no rise can beat a noise of 100: the rule ends each sweep once 4 search trials ended (pruned ones count)
    stopped = replay(table, tpe_asha, 0, cap_s=1000.0, settings=SearchSettings(**{**settings.__dict__,
                                                                                   "noise_sd": 100.0}),
                     space=space, num_samples=32)
    assert stopped.finished_by_searcher and stopped.trials == 4
    figures = measure(table, tpe_asha, repeats=2, noise_sd=100.0, num_samples=32, settings=settings, cap_s=1000.0,
                      space=space)
    assert figures.name == "tpe + ASHA, stagnation" and figures.converged_trials == (4, 4)
    tight = replay(table, tpe_asha, 0, cap_s=1000.0, space=space, num_samples=32,
                   settings=SearchSettings(**{**settings.__dict__, "noise_sd": 1e-9, "patience": 31}))
    assert not tight.finished_by_searcher and tight.trials > 4  # a patience of 31: never within the cap


def test_the_command_prints_the_sampler_and_bound_tables_for_any_evaluator(table_path, capsys) -> None:  # noqa: F811
    from bench.search_converged import main

    main(["--table", str(table_path), "--noise-sd", "1.0", "--repeats", "2", "--samplers", "random",
          "--evaluators", "stagnation", "--patience", "3", "--min-trials", "4"])
    out = capsys.readouterr().out
    assert "patience 3 (stagnation)" in out
    assert "| random | " in out and "1.00x" in out  # the sampler table, random its own reference
    assert "| random + ASHA, stagnation | " in out  # the converged table names the evaluator
    bound = out.split("What any stop rule could save")[1]
    assert "| random + ASHA | " in bound and "stagnation" not in bound


def test_the_sampler_table_says_its_spread_is_the_seeds_and_gives_the_ratio_a_paired_interval() -> None:
    """The bracket after the median is the seeds' 2.5th-97.5th percentiles, no interval of the median; the
    ratio to random search carries the paired bootstrap interval, seed ``i`` of both resampled together."""
    from bench.search_converged import SAMPLER_HEADER, SamplerFigures
    from bench.search_summary import paired_ratio_interval

    def figures(name: str, to_target: list[float]) -> SamplerFigures:
        return SamplerFigures(name, tuple(to_target), (), (), (), (), (), (), 0.0)

    random = figures("random", [100.0, 200.0, 300.0, 400.0, 500.0, 600.0])
    tpe = figures("tpe", [50.0, 100.0, 150.0, 200.0, 250.0, 300.0])  # every seed twice as fast: a ratio of 0.5
    rows = sampler_rows([tpe, random])
    assert rows[0][3] == "0.50x [0.50, 0.50]"  # paired: each resample halves random's own seeds
    low, high = paired_ratio_interval(tpe.to_target, random.to_target[::-1])
    assert low < 0.5 < high  # matched in another order: the seeds' spread widens it
    assert rows[1][3] == "1.00x"
    assert "97.5% of the seeds" in SAMPLER_HEADER[1] and "bootstrap" in SAMPLER_HEADER[3]
