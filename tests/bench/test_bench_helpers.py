"""The benchmark helpers: per-phase peak memory, paired timing, the tree cells' work count."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bench._measure import Peak, peak_rss_mib, reset_peak_rss
from bench.common import paired
from bench.tree_lstm import Work, ceiling_ratio, const_work, dep_work
from sentsweep.methods.multiview.trees import collate_binary, collate_dependency


def test_peak_sees_an_allocation_inside_the_block_only() -> None:
    if not reset_peak_rss():
        pytest.skip("this OS does not let a process reset its peak RSS (/proc/self/clear_refs)")
    with Peak() as big:
        block = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
        del block
    with Peak() as small:
        pass
    assert not big.since_start and big.rss_mib >= small.rss_mib + 48
    assert big.label.endswith("MiB RSS") and peak_rss_mib() > 0


def test_paired_ratio_is_the_median_of_the_pairs() -> None:
    fast, slow, ratio = paired(lambda: time.sleep(0.01), lambda: time.sleep(0.03), repeats=3)
    assert fast < slow and 1.5 < ratio < 6


def test_work_counts_the_products_of_each_cell() -> None:
    dep = collate_dependency([np.array([1, -1, 1]), np.array([-1])])  # 4 nodes, 2 edges, 1 parent
    work = dep_work(dep, input_size=3, hidden=2)
    assert work.shapes == ((4, 3, 6), (1, 3, 4), (2, 2, 4), (1, 2, 6))  # W_f, W_q on the parent only
    assert work.flops(backward=False) == 2 * (72 + 12 + 16 + 12 + 3 * 2 * 2 + 1 * 2)
    assert work.flops(backward=True) == 3 * work.flops(backward=False)
    const = collate_binary([(3, np.array([0, 3]), np.array([1, 2]))])  # 3 leaves, 2 internal nodes
    assert const_work(const, input_size=3, hidden=2).shapes == ((3, 3, 4), (2, 4, 10))
    assert Work(((1, 1, 1),), extra=1).flops(backward=False) == 4.0


def test_the_ceiling_is_above_the_measured_ratio_by_the_share_of_the_limit() -> None:
    """A pass at half the limit would take half its seconds at the limit: the ceiling is twice its ratio (the
    column once multiplied by the share instead, printing ceilings below the ratios measured)."""
    recursive, batched = 10.0, 0.5  # measured ratio 20x
    assert ceiling_ratio(recursive, batched, 0.5) == 40.0
    assert ceiling_ratio(recursive, batched, 1.0) == 20.0
    assert ceiling_ratio(recursive, batched, 0.8) > recursive / batched


def test_a_bench_stopped_by_sigterm_leaves_no_temporary_folder(tmp_path) -> None:
    """The default SIGTERM ends a process without exit-time finalizers: two stopped BML study runs left their
    TrainingLoop work folders in /tmp. With :func:`exit_on_sigterm` the TemporaryDirectory goes with the process."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    script = ("import sys, tempfile, time\n"
              "from bench.common import exit_on_sigterm\n"
              "if sys.argv[1] == 'on':\n    exit_on_sigterm()\n"
              f"folder = tempfile.TemporaryDirectory(prefix='sentsweep-loop-', dir={str(tmp_path)!r})\n"
              "print(folder.name, flush=True)\ntime.sleep(120)\n")
    root = Path(__file__).resolve().parents[2]
    left = {}
    for mode in ("off", "on"):
        process = subprocess.Popen([sys.executable, "-c", script, mode], stdout=subprocess.PIPE, text=True,
                                   cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
        try:
            folder = Path(process.stdout.readline().strip())
            assert folder.is_dir()
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
        finally:
            process.kill()
            process.stdout.close()
        left[mode] = folder.exists()
    assert left == {"off": True, "on": False}
