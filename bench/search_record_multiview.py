"""Record a multi-view table: a grid of short multi-view trials, where the settings move the dev figure by points.

The multi-view method trains its encoders from scratch on frozen GloVe vectors, so its view pair, hidden size and
learning rate matter far more than CoSENT's settings on a pretrained MiniLM. Every grid point (view pair x hidden
size x learning rate; the other settings fixed at :class:`MultiviewSettings`) is trained as a sweep trial trains it
(:func:`bench.search_record.run_trial`: the method's config validation, task and the shared training loop, without
Ray) with seed 42; the ``replicated`` points are trained again with further seeds, so the table measures its own
noise (:meth:`bench.search_grid.GridTable.noise_sd`). Rows carry a ``seed`` column; the recording is resumable per
(point, seed), and ``--part K/N`` records every N-th trial so that N processes can record side by side.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.search_grid import METHOD_LINE, Config, append_rows, recorded_configs, write_provenance
from bench.search_record import machine_line, run_trial, table_cpu_seconds
from sentsweep.evaluation.sts import SAMPLE_SEED
from sentsweep.trainables.multiview import MULTIVIEW

PARAMS: tuple[str, ...] = ("views", "hidden_size", "lr")
FIRST_SEED = 42


@dataclass(frozen=True)
class MultiviewSettings:
    """What every trial shares: a CPU-sized version of the paper's setting (dep+const trees, Adam at a constant
    rate, frozen GloVe 6B 50-d, consecutive corpus sentences per batch)."""

    steps: int = 300
    reports: int = 6
    sentences: int = 8000
    batch_size: int = 64
    dev_pairs: int = 300
    data_dir: str | None = None
    max_vectors: int | None = None  # the vector file's first N rows (None: all)

    @property
    def eval_every(self) -> int:
        return max(1, self.steps // self.reports)

    def trial_config(self, point: Config, seed: int) -> dict[str, Any]:
        return {**dict(zip(PARAMS, point, strict=True)), "seed": seed, "corpus": "enwiki",
                "max_sentences": self.sentences, "batch_size": self.batch_size, "max_steps": self.steps,
                "eval_every": self.eval_every, "max_dev_pairs": self.dev_pairs, "dev_data": "stsb",
                "word_vectors": "glove-6b-50d", "constituency": "derived", "encode_batch_size": 128,
                "checkpoint_every": 10**6, "device": "cpu", "test_tasks": "sts", "data_dir": self.data_dir,
                "max_vectors": self.max_vectors}

    def description(self) -> str:
        return (f"trials: multi-view, enwiki sample's first {self.sentences} sentences, batch {self.batch_size}, "
                f"{self.steps} steps, dev ({self.dev_pairs} STS-B dev pairs sampled with seed {SAMPLE_SEED}, "
                f"Spearman x100) every {self.eval_every} steps, GloVe 6B 50-d frozen, derived constituency trees, "
                "Adam at a constant rate, gradient-norm clip 5")


@dataclass(frozen=True)
class MultiviewGrid:
    """The grid (around the paper's dep+const, Adam 5e-4) and the points recorded with ``extra_seeds`` too."""

    views: tuple[str, ...] = ("bow+seq", "seq+seq", "seq+dep", "dep+const")
    hidden_size: tuple[int, ...] = (64, 256)
    lr: tuple[float, ...] = (1.5e-4, 5e-4, 1.5e-3, 4.5e-3)
    replicated: tuple[Config, ...] = (("dep+const", 256, 5e-4), ("seq+seq", 256, 1.5e-3), ("bow+seq", 64, 5e-4),
                                      ("seq+dep", 256, 4.5e-3))
    extra_seeds: tuple[int, ...] = (43, 44)

    def trials(self) -> list[tuple[Config, int]]:
        """Every (point, seed) to record: the grid at seed 42 first, then the replicas (of the replicated points on
        the grid)."""
        points = [(v, int(h), float(lr)) for v, h, lr in itertools.product(self.views, self.hidden_size, self.lr)]
        replicated = [p for p in self.replicated if p in points] or points[:1]  # a smaller grid: its first point
        return [(p, FIRST_SEED) for p in points] + [(p, s) for s in self.extra_seeds for p in replicated]


def record_multiview(path: Path, settings: MultiviewSettings, grid: MultiviewGrid, command: str,
                     log: Callable[[str], None] = print, part: tuple[int, int] = (1, 1),
                     limit: int | None = None) -> int:
    """Record the (point, seed) trials ``path`` lacks (this process's ``part`` of them, at most ``limit``)."""
    index, parts = part
    mine = grid.trials()[index - 1::parts]
    done = {seed: recorded_configs(path, seed) for seed in {s for _, s in mine}}  # the table read once per seed
    todo: Sequence[tuple[Config, int]] = [(p, s) for p, s in mine if p not in done[s]]
    log(f"{len(mine) - len(todo)} trials recorded already, {len(todo)} to record into {path}")
    todo = todo[:limit] if limit is not None else todo
    for number, (point, seed) in enumerate(todo, 1):
        label = {**dict(zip(PARAMS, point, strict=True)), "seed": seed}
        rows = run_trial(MULTIVIEW, settings.trial_config(point, seed), label)
        append_rows(path, rows)
        write_provenance(path, [f"made by: {command}", METHOD_LINE + "multiview", machine_line(table_cpu_seconds(path)),
                                settings.description(), grid_line(grid)])
        curve = " ".join(f"{r['stsb_dev']:.2f}" for r in rows)
        log(f"[{number}/{len(todo)}] {label}: {curve} in {rows[-1]['seconds']:.0f} s")
    return len(todo)


def grid_line(grid: MultiviewGrid) -> str:
    replicated = sorted({p for p, s in grid.trials() if s != FIRST_SEED})
    return (f"grid: views {list(grid.views)} x hidden {list(grid.hidden_size)} x lr {list(grid.lr)}, seed "
            f"{FIRST_SEED}; seeds {list(grid.extra_seeds)} too at {[list(p) for p in replicated]}; seconds "
            "(wall) and cpu_seconds: cumulative from the trial's start, corpus and vectors loading included")
