"""The multi-view table: recorded through the method's own trial path, with seeds that measure the noise, and
replayed on its own grid (the shipped multi-view space is paper-sized)."""

from __future__ import annotations

import itertools
from pathlib import Path

import optuna
import pytest

from bench.search_grid import append_rows, merge_tables, read_table, recorded_configs
from bench.search_record_multiview import MultiviewGrid, MultiviewSettings, record_multiview
from bench.search_replay import ReplaySpace, Strategy, replay
from sentsweep.data import SAMPLE_DIR

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_recording_trains_each_point_and_seed_once_and_measures_the_noise(
        tmp_path: Path, session_cache: Path, monkeypatch: pytest.MonkeyPatch, one_torch_thread: None) -> None:
    monkeypatch.setenv("SENTSWEEP_CACHE", str(session_cache))
    settings = MultiviewSettings(steps=4, reports=2, sentences=96, batch_size=16, dev_pairs=40,
                                 data_dir=str(SAMPLE_DIR), max_vectors=20_000)
    grid = MultiviewGrid(views=("seq+seq", "dep+const"), hidden_size=(8,), lr=(1e-3,),
                         replicated=(("dep+const", 8, 1e-3),), extra_seeds=(43,))
    assert grid.trials() == [(("seq+seq", 8, 1e-3), 42), (("dep+const", 8, 1e-3), 42), (("dep+const", 8, 1e-3), 43)]
    path, lines = tmp_path / "mv.csv", []
    assert record_multiview(path, settings, grid, "a test", log=lines.append, limit=2) == 2
    assert record_multiview(path, settings, grid, "a test", log=lines.append) == 1  # resumed: the replica only
    assert lines[0].startswith("0 trials recorded already, 3 to record") and "2 trials recorded already" in lines[3]
    table = read_table(path)
    assert table.method == "multiview" and table.params == ("views", "hidden_size", "lr")
    assert sorted(table.curves) == [("dep+const", 8, 1e-3), ("seq+seq", 8, 1e-3)] and table.reports == 2
    assert list(table.replicas) == [("dep+const", 8, 1e-3)]
    first, again = table.curves[("dep+const", 8, 1e-3)], table.replicas[("dep+const", 8, 1e-3)][0]
    assert first.steps == again.steps == (2, 4) and first.values != again.values  # another seed, another curve
    assert table.noise_sd() == pytest.approx(abs(first.best - again.best) / 2**0.5)
    assert recorded_configs(path, 43) == {("dep+const", 8, 1e-3)}
    text = path.read_text()
    assert "# method: multiview" in text and "views,hidden_size,lr,seed,step,stsb_dev,seconds,cpu_seconds" in text


def _multiview_rows(seeds: dict[tuple, list[int]] | None = None) -> list[dict]:
    rows = []
    for views, hidden, lr in itertools.product(["bow+seq", "seq+seq", "dep+const"], [64, 256], [1.5e-4, 5e-4, 4.5e-3]):
        quality = {"bow+seq": 55.0, "seq+seq": 40.0, "dep+const": 58.0}[views] + hidden / 64 + 2 * (lr > 1e-3)
        for seed in (seeds or {}).get((views, hidden, lr), [42]):
            for i in range(3):
                rows.append({"views": views, "hidden_size": hidden, "lr": lr, "seed": seed, "step": 50 * (i + 1),
                             "stsb_dev": quality - 3 / (i + 1) + (seed - 42) * 0.1, "seconds": 10.0 * (i + 1),
                             "cpu_seconds": 9.0 * (i + 1)})
    return rows


def test_a_table_of_another_method_is_replayed_on_its_own_grid(tmp_path: Path) -> None:
    path = tmp_path / "mv.csv"
    rows = _multiview_rows({("dep+const", 256, 5e-4): [42, 43, 44]})
    append_rows(path, rows, ["made by: a test", "method: multiview"])
    table = read_table(path)
    assert table.is_complete() and table.noise_sd() == pytest.approx(0.1)
    space = ReplaySpace.for_table(table)
    assert space.space is None
    assert list(space.distributions["views"].choices) == ["bow+seq", "dep+const", "seq+seq"]
    assert list(space.distributions["hidden_size"].choices) == [64, 256]
    lr = space.distributions["lr"]
    assert lr.log and (lr.low, lr.high) == (1.5e-4, 4.5e-3)
    # the method's defaults (dep+const, hidden 2400, lr 5e-4) snapped to the grid
    assert space.first_point() == {"views": "dep+const", "hidden_size": 256, "lr": 5e-4}
    trace = replay(table, Strategy("tpe", "tpe", False, True), seed=0, cap_s=300.0)
    assert trace.runs[0] == (("dep+const", 256, 5e-4), 3)
    grid = replay(table, Strategy("grid", "grid", False), seed=1, cap_s=1e9)
    assert sorted(c for c, _ in grid.runs) == sorted(table.curves) and grid.incumbent[-1] == table.best


def test_parts_recorded_side_by_side_merge_with_their_seeds(tmp_path: Path) -> None:
    rows = _multiview_rows({("dep+const", 256, 5e-4): [42, 43]})
    one, two, out = tmp_path / "1.csv", tmp_path / "2.csv", tmp_path / "mv.csv"
    append_rows(one, rows[::2], ["made by: part 1", "method: multiview"])
    append_rows(two, rows[1::2], ["made by: part 2", "method: multiview"])
    with pytest.raises(ValueError, match="recorded in"):  # the same trial's rows split across parts
        merge_tables([one, two], tmp_path / "split.csv", "merge")
    by_seed = [r for r in rows if r["seed"] == 43]
    append_rows(tmp_path / "a.csv", [r for r in rows if r["seed"] == 42], ["method: multiview"])
    append_rows(tmp_path / "b.csv", by_seed, ["method: multiview"])
    assert merge_tables([tmp_path / "a.csv", tmp_path / "b.csv"], out, "merge a b") == 18
    merged = read_table(out)
    assert merged.method == "multiview" and len(merged.replicas) == 1 and merged.is_complete()
    cosent = tmp_path / "cosent.csv"
    append_rows(cosent, [r for r in rows if r["seed"] == 43], ["made by: a CoSENT part"])
    with pytest.raises(ValueError, match="different methods"):
        merge_tables([tmp_path / "a.csv", cosent], tmp_path / "mixed.csv", "merge")
