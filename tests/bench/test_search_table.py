"""The search-efficiency benchmark's table and replay (bench/search_grid.py, search_replay.py, search_summary.py) on a
tiny synthetic table: no training, the platform's real searcher (Ray's OptunaSearch) and scheduler (Ray's ASHA)."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import optuna
import pytest

from bench.search_grid import PARAMS, GridTable, append_rows, merge_tables, read_table, recorded_configs
from bench.search_replay import STRATEGIES, ReplaySpace, SearchSettings, replay
from bench.search_summary import (
    Summary,
    quartiles,
    ratio_interval,
    ratio_text,
    ratio_to_reference,
    run_all,
    table_rows,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
BY_NAME = {s.name: s for s in STRATEGIES}
TPE_ASHA, TPE, RANDOM_ASHA, RANDOM, GRID = (BY_NAME[name] for name in (
    "TPE + ASHA (defaults first)", "TPE (defaults first)", "random + ASHA", "random", "grid"))
DEFAULTS = (20.0, 2e-5, "mean", 16)


def _quality(scale: float, lr: float, pooling: str, batch: int) -> float:
    """Best near lr 5e-5, scale 20, mean pooling, batch 32; the paper's defaults are 0.5 below the best."""
    return 90 - 2 * abs(math.log10(lr / 5e-5)) - (1.0 if pooling == "cls" else 0.0) - 0.02 * abs(scale - 20) \
        + (0.3 if batch == 32 else 0.0)


def _rows() -> list[dict]:
    rows = []
    for scale, lr, pooling, batch in itertools.product([5.0, 20.0], [5e-6, 2e-5, 5e-5, 1e-4], ["mean", "cls"],
                                                       [16, 32]):
        q, cost = _quality(scale, lr, pooling, batch), 10.0 * batch / 16
        for i in range(3):  # three reports, rising towards q; later reports cost more
            rows.append({"scale": scale, "lr": lr, "pooling": pooling, "batch_size": batch, "step": 10 * (i + 1),
                         "stsb_dev": round(q - 1.5 / (i + 1), 4), "cpu_seconds": 5.0 + cost * (i + 1),
                         "seconds": 2 * (5.0 + cost * (i + 1))})  # wall: a loaded machine
    return rows


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grid") / "grid.csv"
    rows = _rows()
    append_rows(path, rows[: len(rows) // 2], provenance=["made by: a test"])
    append_rows(path, rows[len(rows) // 2:])  # a resumed recording appends below
    return path


@pytest.fixture(scope="module")
def table(table_path: Path):
    return read_table(table_path)


def test_the_table_round_trips_with_its_provenance(table_path: Path, table) -> None:
    text = table_path.read_text()
    assert text.startswith("# made by: a test\nscale,lr,pooling,batch_size,step,stsb_dev,seconds,cpu_seconds\n")
    assert text.count("scale,lr") == 1  # the header once, even after an append
    assert len(recorded_configs(table_path)) == 32 and table.is_complete() and table.reports == 3
    curve = table.curves[DEFAULTS]
    assert curve.steps == (10, 20, 30) and curve.seconds == (15.0, 25.0, 35.0)  # the CPU seconds by default
    assert read_table(table_path, cost="seconds").curves[DEFAULTS].seconds == (30.0, 50.0, 70.0)
    assert table.best == pytest.approx(_quality(20.0, 5e-5, "mean", 32) - 0.5)
    assert table.values("lr") == [5e-6, 2e-5, 5e-5, 1e-4] and table.values("pooling") == ["cls", "mean"]
    sub = table.restricted("batch_size", ["16"])
    assert len(sub.curves) == 16 and sub.values("batch_size") == [16] and sub.is_complete()
    assert not table.restricted("lr", ["2e-5"]).curves.keys() - {k for k in table.curves if k[1] == 2e-5}


def test_recording_appends_each_trial_and_resumes(tmp_path: Path, tiny_bert_dir: Path, one_torch_thread: None) -> None:
    from bench.search_record import Grid, RecordSettings, record

    path = tmp_path / "grid.csv"
    settings = RecordSettings(steps=4, reports=2, train_pairs=24, dev_pairs=16, max_length=16, model=str(tiny_bert_dir))
    grid = Grid(scale=(5.0, 20.0), lr=(1e-4,), pooling=("mean",), batch_size=(4,))
    assert record(path, settings, grid, "a test", log=lambda m: None, limit=1) == 1
    first = read_table(path)
    assert list(first.curves) == [(5.0, 1e-4, "mean", 4)] and first.curves[(5.0, 1e-4, "mean", 4)].steps == (2, 4)
    for cost in ("cpu_seconds", "seconds"):
        seconds = read_table(path, cost).curves[(5.0, 1e-4, "mean", 4)].seconds
        assert 0 < seconds[0] < seconds[1]
    assert record(path, settings, grid, "a test", log=lambda m: None) == 1  # only the missing point
    assert read_table(path).is_complete() and path.read_text().startswith("# made by: a test\n")
    assert "scale [5.0, 20.0]" in path.read_text()
    with pytest.raises(ValueError, match="reports at steps"):
        record(path, RecordSettings(steps=6, reports=2, model=str(tiny_bert_dir)), grid, "x", log=lambda m: None)
    assert "16 STS-B dev pairs sampled with seed 0" in path.read_text()
    recorded = path.read_text()
    for sampled, first in (("16 STS-B dev pairs sampled with seed 0", "first 16 STS-B dev pairs"),
                           (f"{settings.train_pairs} STS-B train pairs sampled with seed 0",
                            f"first {settings.train_pairs} STS-B train pairs")):
        assert sampled in recorded
        with pytest.raises(ValueError, match="recorded on other pairs than"):  # a table of the first pairs
            path.write_text(recorded.replace(sampled, first))
            record(path, settings, Grid(scale=(1.0,), lr=(1e-4,), pooling=("mean",), batch_size=(4,)), "x",
                   log=lambda m: None)


def test_tables_recorded_side_by_side_merge_into_one(tmp_path: Path, table) -> None:
    rows = _rows()
    mean, cls, out = tmp_path / "mean.csv", tmp_path / "cls.csv", tmp_path / "grid.csv"
    append_rows(mean, [r for r in rows if r["pooling"] == "mean"], provenance=["made by: record --pooling mean"])
    append_rows(cls, [r for r in rows if r["pooling"] == "cls"], provenance=["made by: record --pooling cls"])
    assert merge_tables([mean, cls], out, "merge mean.csv cls.csv") == 32
    merged = read_table(out)
    assert merged.is_complete() and merged.curves == table.curves
    assert out.read_text().startswith("# merged by: merge mean.csv cls.csv\n# part mean.csv: made by: record "
                                      "--pooling mean\n# part cls.csv: made by: record --pooling cls\nscale,")
    with pytest.raises(ValueError, match="exists"):
        merge_tables([mean, cls], out, "again")
    with pytest.raises(ValueError, match=r"configuration \(5.0, 5e-06, 'mean', 16\) is recorded in .*mean.csv too"):
        merge_tables([mean, mean], tmp_path / "twice.csv", "twice")
    longer = tmp_path / "longer.csv"
    append_rows(longer, [{**r, "step": r["step"] * 2} for r in rows if r["pooling"] == "cls"])
    with pytest.raises(ValueError, match="different steps"):
        merge_tables([mean, longer], tmp_path / "mixed.csv", "mixed")
    assert not (tmp_path / "twice.csv").exists() and not (tmp_path / "mixed.csv").exists()


def test_the_replay_space_is_the_sweeps_cut_to_the_table(table) -> None:
    space = ReplaySpace(table)
    assert space.distributions["scale"].low == 1.0 and space.distributions["scale"].high == 40.0  # cosent space
    assert space.distributions["lr"].log
    assert sorted(space.distributions["pooling"].choices) == ["cls", "mean"]  # max, first_last: not recorded
    assert list(space.distributions["batch_size"].choices) == [16, 32]  # 64: not recorded
    assert tuple(space.first_point()[p] for p in PARAMS) == DEFAULTS
    # lr snaps on a log scale (3.3e-5 is nearer 5e-5 than 2e-5 there), scale linearly
    assert space.snap({"scale": 12.0, "lr": 3.3e-5, "pooling": "cls", "batch_size": 32}) == (5.0, 5e-5, "cls", 32)
    assert space.snap({"scale": 13.0, "lr": 3.0e-5, "pooling": "mean", "batch_size": 16}) == (20.0, 2e-5, "mean", 16)
    batch_8 = GridTable({(c[0], c[1], c[2], 8 if c[3] == 32 else 16): curve for c, curve in table.curves.items()})
    with pytest.raises(ValueError, match=r"grid values \[8\] of 'batch_size' are not among the space's choices"):
        ReplaySpace(batch_8)  # 8 is not a choice of the sweep's space: the replay must not drop it unseen
    assert list(ReplaySpace(batch_8.restricted("batch_size", ["16"])).distributions["batch_size"].choices) == [16]


def test_tpe_with_asha_starts_from_the_defaults_and_asha_stops_the_weaker_trials(table) -> None:
    trace = replay(table, TPE_ASHA, seed=0, cap_s=400.0, settings=SearchSettings(grace_period=1))
    assert trace.runs[0] == (DEFAULTS, 3)  # the paper's defaults first, run to the end (the first at every rung)
    defaults_first_report = table.curves[DEFAULTS].values[0]
    # Ray's ASHA (grace 1, reduction 2): a trial below the first rung's median stops after its first report
    assert any(reports == 1 for _, reports in trace.runs)
    second = trace.runs[1]
    assert second[1] == (1 if table.curves[second[0]].values[0] < defaults_first_report else 3)
    assert trace.stopped_early == sum(reports < 3 for _, reports in trace.runs)
    # the searcher told Optuna the stopped trials were PRUNED, the others COMPLETE
    assert trace.states == {"COMPLETE": trace.trials - trace.stopped_early, "PRUNED": trace.stopped_early}


def test_without_defaults_tpe_starts_at_random(table) -> None:
    firsts = {replay(table, BY_NAME["TPE + ASHA (no defaults)"], seed=s, cap_s=1.0).runs[0][0] for s in range(4)}
    assert len(firsts) > 1  # seeded random startup trials, not the paper's point every time


def test_without_asha_every_trial_runs_to_its_end_and_costs_its_recorded_seconds(table) -> None:
    trace = replay(table, TPE, seed=0, cap_s=200.0)
    assert trace.stopped_early == 0 and all(reports == 3 for _, reports in trace.runs)
    full = sum(table.curves[config].seconds[-1] for config, _ in trace.runs)
    assert trace.spent[-1] == pytest.approx(full) and trace.wall == trace.spent  # one at a time: wall = spent
    assert trace.spent[-1] >= 200.0 and full - table.curves[trace.runs[-1][0]].seconds[-1] < 200.0  # the cap


def test_grid_visits_every_point_once_and_finds_the_best(table) -> None:
    trace = replay(table, GRID, seed=3, cap_s=1e9)
    assert sorted(config for config, _ in trace.runs) == sorted(table.curves)
    assert trace.incumbent[-1] == table.best
    assert trace.spent[-1] == pytest.approx(sum(c.seconds[-1] for c in table.curves.values()))


def test_random_search_is_seeded(table) -> None:
    first, again = (replay(table, RANDOM, seed=5, cap_s=150.0) for _ in range(2))
    assert first.runs == again.runs and first.spent == again.spent
    assert replay(table, RANDOM, seed=6, cap_s=150.0).runs != first.runs


def test_concurrent_trials_run_side_by_side_in_event_time(table) -> None:
    trace = replay(table, RANDOM_ASHA, seed=0, cap_s=400.0, concurrency=16)
    assert trace.wall[0] == min(c.seconds[0] for c in table.curves.values()) or trace.wall[0] >= 15.0
    assert trace.spent[0] == pytest.approx(16 * trace.wall[0])  # 16 trials started at 0, all running
    target = table.best - 0.2
    assert trace.seconds_to(target, wall=True) <= trace.seconds_to(target)


def test_asha_settings_reach_the_scheduler(table) -> None:
    early = replay(table, TPE_ASHA, seed=0, cap_s=400.0, settings=SearchSettings(grace_period=2))
    assert early.stopped_early > 0 and early.states["PRUNED"] == early.stopped_early  # (pruned, not final)
    at_last = replay(table, TPE_ASHA, seed=0, cap_s=400.0, settings=SearchSettings(grace_period=3))
    # the one rung is the last report: a trial there trained every step, so it goes on to its final report
    assert at_last.stopped_early == 0 and set(at_last.states) == {"COMPLETE"}
    assert {reports for _, reports in at_last.runs} == {3}


def test_trace_queries() -> None:
    from bench.search_replay import Trace

    trace = Trace(spent=[10.0, 30.0, 60.0], wall=[10.0, 20.0, 30.0], incumbent=[80.0, 85.0, 90.0])
    assert trace.seconds_to(85.0) == 30.0 and trace.seconds_to(85.0, wall=True) == 20.0
    assert trace.seconds_to(95.0) == math.inf
    assert trace.best_within(5.0) == -math.inf and trace.best_within(59.0) == 85.0


def test_summary_quartiles_and_the_ratio_to_random(table) -> None:
    assert quartiles([1.0, 2.0, 3.0, math.inf]) == (1.0, 2.0, 3.0)
    summaries = run_all(table, [TPE_ASHA, RANDOM], repeats=3, concurrencies=[1], cap_s=3000.0, budget_s=100.0,
                        tolerance=1.0)  # several points within 1.0 of the best: random gets there soon
    assert [s.strategy for s in summaries] == [TPE_ASHA.name, RANDOM.name]
    random = summaries[1]
    assert ratio_to_reference(random, summaries) == pytest.approx(1.0)
    assert ratio_to_reference(summaries[0], summaries) == pytest.approx(summaries[0].to_target[1] / random.to_target[1])
    assert all(0.0 <= s.reached <= 1.0 and s.regret[1] >= 0.0 for s in summaries)
    lone = Summary("x", 4, (1.0, 2.0, 3.0), 1.0, 1.0, (0.0, 0.0, 0.0), 1.0)
    assert math.isnan(ratio_to_reference(lone, summaries))  # no random search at that concurrency
    slow_random = Summary("random", 2, (5.0, math.inf, math.inf), math.inf, 0.4, (0.0, 0.0, 0.0), 1.0, 100.0)
    fast = Summary("x", 2, (1.0, 20.0, 30.0), 20.0, 1.0, (0.0, 0.0, 0.0), 1.0, 100.0)
    assert ratio_text(fast, [slow_random, fast]) == "< 0.20x (random: > cap)"  # a bound: random's median > cap
    assert ratio_text(random, summaries) == "1.00x"


def test_the_ratio_to_random_carries_a_bootstrap_interval_of_the_seeds() -> None:
    random = Summary("random", 1, (2.0, 4.0, 6.0), 4.0, 1.0, (0.0, 0.0, 0.0), 1.0, per_seed=(2.0, 4.0, 6.0, 4.0))
    same = Summary("x", 1, (2.0, 4.0, 6.0), 4.0, 1.0, (0.0, 0.0, 0.0), 1.0, per_seed=(4.0, 4.0, 4.0, 4.0))
    low, high = ratio_interval(same, [random, same])
    assert low <= 1.0 <= high and (low, high) != (1.0, 1.0)  # random's spread alone moves the ratio
    assert ratio_text(same, [random, same]) == f"1.00x [{low:.2f}, {high:.2f}]"
    erratic = Summary("x", 1, (2.0, 4.0, math.inf), 4.0, 0.5, (0.0, 0.0, 0.0), 1.0,
                      per_seed=(2.0, 4.0, math.inf, math.inf))
    assert ratio_interval(erratic, [random, erratic])[1] == math.inf  # half the seeds never got there
    assert ratio_interval(Summary("x", 1, (1.0, 1.0, 1.0), 1.0, 1.0, (0.0, 0.0, 0.0), 1.0), [random]) is None
    busy = Summary("x", 16, (1.0, 1.0, 1.0), 1.0, 1.0, (math.inf, math.inf, math.inf), 1.0)  # 16 trials, no report
    assert table_rows([busy])[0][5] == "no report yet"  # within the budget, not an infinite regret
