"""`bench.train_cosent` runs each side in a process of its own and prints the three rows and the ratios."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tools.harness.processes import REPO, repo_pythonpath


@pytest.mark.slow
def test_the_cosent_bench_runs_every_side_in_its_own_process_and_prints_the_ratios() -> None:
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    done = subprocess.run([sys.executable, "-m", "bench.train_cosent", "--pairs", "32", "--warmup-pairs", "0",
                           "--test-pairs", "40"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| sentsweep") or
            line.startswith("| sentence-transformers")]
    assert len(rows) == 3, done.stdout
    ratio = re.search(r"ratio ours/sentence-transformers = ([0-9.]+)x", done.stdout)
    assert ratio is not None and float(ratio.group(1)) > 0, done.stdout
    assert "the reference with the allocator setting" in done.stdout


def test_the_quality_verdict_says_when_the_trainers_differ() -> None:
    from bench.train_cosent import quality_verdict

    assert quality_verdict(0.29) == "equal quality: within 0.5"
    assert quality_verdict(-0.5) == "equal quality: within 0.5"
    assert quality_verdict(0.98).startswith("NOT equal quality: beyond 0.5")
    assert quality_verdict(-0.51).startswith("NOT equal quality")
