"""Record the tabular benchmark: real short CoSENT trials on a grid, each one's dev curve and seconds.

Every configuration of the grid (scale x learning rate x pooling x batch size; warmup, weight decay, max length and
the seed at the paper's defaults, :class:`~sentsweep.trainables.cosent.CosentConfig`) is trained as a sweep trial
trains it, without Ray: the config validated by :meth:`~sentsweep.trainables.method.Method.parse`, the generators
seeded, the task built (:meth:`CosentMethod.build_task`: offline MiniLM, ``train_pairs`` STS-B train pairs
sampled across the file as ``max_train_pairs`` keeps them, ``dev_pairs`` STS-B dev pairs drawn as every trial's dev
set is, :func:`~sentsweep.evaluation.sts.sampled_pairs`; the tables in ``bench/data`` were recorded before those
samples, on the first train pairs (and the first table on the first dev pairs), as their ``#`` lines say, and a
recording is not resumed across either change) and the shared :class:`~sentsweep.trainables.loop.TrainingLoop`
run to ``steps`` steps with a dev evaluation every ``steps / reports``, which is the body of
:func:`~sentsweep.trainables.method.run_trial` without the test-suite evaluation that follows the last report (no
searcher sees it). Each report's seconds are counted from the start of the trial (model and data loading
included), so they are the cost a scheduler saves by stopping the trial there; the wall seconds and the process's
CPU seconds are both kept (on a shared machine the wall seconds of the same work vary several-fold with the load).

The recording is resumable: a trial's rows are appended together when it ends, and configurations the table holds
already are skipped.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bench.search_grid import PARAMS, Config, append_rows, read_rows, recorded_configs, write_provenance
from sentsweep.evaluation.sts import SAMPLE_SEED
from sentsweep.trainables.cosent import COSENT
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.method import Method
from sentsweep.trainables.optimizer import seed_everything


@dataclass(frozen=True)
class RecordSettings:
    """What every trial of the table shares (defaults: the table in the repository, sized for a loaded 2-core CPU)."""

    steps: int = 30
    reports: int = 3
    train_pairs: int = 2000
    dev_pairs: int = 150
    max_length: int = 32
    data_dir: str | None = None
    model: str = "minilm"  # the offline all-MiniLM-L6-v2 package

    @property
    def eval_every(self) -> int:
        return max(1, self.steps // self.reports)

    def report_steps(self) -> list[int]:
        """The steps of a trial's reports (every ``eval_every`` steps, and the last step)."""
        return sorted({*range(self.eval_every, self.steps + 1, self.eval_every), self.steps})


@dataclass(frozen=True)
class Grid:
    """The grid's values per searched setting (around the CoSENT paper's defaults: lambda 20, lr 2e-5, mean, 16)."""

    scale: tuple[float, ...] = (5.0, 20.0)
    lr: tuple[float, ...] = (5e-6, 2e-5, 5e-5, 1e-4)
    pooling: tuple[str, ...] = ("mean", "cls")
    batch_size: tuple[int, ...] = (16, 32)

    def configs(self) -> list[Config]:
        """Every combination; the cheaper batch size first, so an interrupted recording has the most trials."""
        combos = itertools.product(self.batch_size, self.pooling, self.lr, self.scale)
        return [(float(s), float(lr), str(p), int(b)) for b, p, lr, s in combos]


def trial_config(config: Config, settings: RecordSettings) -> dict[str, Any]:
    """The raw CoSENT trial config of one grid point."""
    return {
        **dict(zip(PARAMS, config, strict=True)),
        "model": settings.model,
        "train_data": "stsb",
        "dev_data": "stsb",
        "max_train_pairs": settings.train_pairs,
        "max_dev_pairs": settings.dev_pairs,
        "max_length": settings.max_length,
        "max_steps": settings.steps,
        "eval_every": settings.eval_every,
        "checkpoint_every": 10**6,  # no resumable checkpoints: nothing here resumes a trial
        "device": "cpu",
        "data_dir": settings.data_dir,
    }


def run_trial(method: Method, raw: dict[str, Any], label: dict[str, Any]) -> list[dict[str, Any]]:
    """Train one trial of ``method`` as a sweep trial trains it (without Ray); the table rows of its reports:
    ``label`` (the grid point, and its seed), the step, the dev value and the cumulative seconds."""
    parsed = method.parse(raw, source=f"grid point {label}")
    started, cpu_started = time.perf_counter(), time.process_time()
    rows: list[dict[str, Any]] = []

    def report(metrics: dict[str, float], checkpoint: Path | None) -> None:
        rows.append({**label, "step": int(metrics["step"]), "stsb_dev": round(float(metrics[parsed.metric]), 4),
                     "seconds": round(time.perf_counter() - started, 2),
                     "cpu_seconds": round(time.process_time() - cpu_started, 2)})

    seed_everything(parsed.seed)
    task = method.build_task(parsed)
    loop = TrainingLoop(task, parsed.loop_config(), report=report)
    try:
        loop.run()
    finally:
        loop.cleanup()
    return rows


def run_grid_point(config: Config, settings: RecordSettings) -> list[dict[str, Any]]:
    """Train one CoSENT grid point; the table rows of its reports."""
    return run_trial(COSENT, trial_config(config, settings), dict(zip(PARAMS, config, strict=True)))


def machine_line(seconds: float) -> str:
    """The provenance line naming the machine, torch's threads, the last trial's time and the table's CPU time."""
    return (f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores (shared), torch "
            f"{torch.__version__} on CPU with {torch.get_num_threads()} threads; last trial "
            f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {seconds / 60:.0f} CPU-minutes in the table")


def table_cpu_seconds(path: Path) -> float:
    """The CPU seconds of every trial in the table (each trial's last report)."""
    last: dict[tuple[str, ...], float] = {}
    for row in read_rows(path):
        key = tuple(v for k, v in row.items() if k not in ("step", "stsb_dev", "seconds", "cpu_seconds"))
        last[key] = max(last.get(key, 0.0), float(row["cpu_seconds"]))
    return sum(last.values())


def provenance(settings: RecordSettings, grid: Grid, command: str, seconds: float) -> list[str]:
    """The table's ``#`` header: how it was made (rewritten after every trial, so it names the last command)."""
    model = "offline all-MiniLM-L6-v2" if settings.model == "minilm" else settings.model
    return [
        f"made by: {command}",
        machine_line(seconds),
        f"trials: CoSENT, {model}, {train_description(settings)}, "
        f"{settings.steps} steps, dev ({dev_description(settings)}, Spearman x100) every "
        f"{settings.eval_every} steps, max length {settings.max_length}, seed 42, warmup 0.1, weight decay 0.01",
        f"grid: scale {list(grid.scale)} x lr {list(grid.lr)} x pooling {list(grid.pooling)} x batch "
        f"{list(grid.batch_size)}; seconds (wall) and cpu_seconds (the process's CPU time, which the machine's load "
        "disturbs far less): cumulative from the trial's start, model and data loading included",
    ]


def train_description(settings: RecordSettings) -> str:
    """The training pairs of the table's trials, as its ``#`` lines name them (``max_train_pairs``: a seeded sample
    across the genre-sorted file; the tables recorded before it trained on the "first N" pairs)."""
    return f"{settings.train_pairs} STS-B train pairs sampled with seed {SAMPLE_SEED}"


def dev_description(settings: RecordSettings) -> str:
    """The dev set of the table's trials, as its ``#`` lines name it."""
    return f"{settings.dev_pairs} STS-B dev pairs sampled with seed {SAMPLE_SEED}"


def record(path: Path, settings: RecordSettings, grid: Grid, command: str,
           log: Callable[[str], None] = print, limit: int | None = None) -> int:
    """Record every grid point ``path`` lacks (at most ``limit``); the number recorded."""
    steps = sorted({int(r["step"]) for r in read_rows(path)})
    if steps and steps != settings.report_steps():
        raise ValueError(f"{path} holds reports at steps {steps}, these settings report at {settings.report_steps()}: "
                         "resume with the table's settings (its # lines), or record into another --table")
    for described in (dev_description(settings), train_description(settings)):
        if steps and described not in path.read_text(encoding="utf-8"):
            raise ValueError(f"{path} was recorded on other pairs than {described} (its # lines): record into "
                             "another --table")
    done = recorded_configs(path)
    todo: Sequence[Config] = [c for c in grid.configs() if c not in done]
    if limit is not None:
        todo = todo[:limit]
    log(f"{len(done)} grid points recorded already, {len(todo)} to record into {path}")
    for index, config in enumerate(todo, 1):
        rows = run_grid_point(config, settings)
        append_rows(path, rows)
        write_provenance(path, provenance(settings, grid, command, table_cpu_seconds(path)))
        curve = " ".join(f"{r['stsb_dev']:.2f}" for r in rows)
        log(f"[{index}/{len(todo)}] {dict(zip(PARAMS, config, strict=True))}: {curve} in {rows[-1]['seconds']:.0f} s "
            f"({dt.datetime.now(dt.UTC):%H:%M:%S} UTC)")
    return len(todo)
