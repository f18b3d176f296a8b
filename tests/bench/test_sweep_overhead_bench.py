"""`bench.sweep_overhead` runs to its figures on the sweep as it is now (make bench stopped there twice: on the
preflight check of an empty final suite, then on the confirmation stage's runs under the sweep's parent)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.harness.processes import repo_pythonpath

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.cluster  # a sweep in a process of its own, with its own Ray: run by make test-cluster (CI runs both)
def test_the_overhead_bench_matches_every_run_to_a_trial_and_prints_its_figures() -> None:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled",
           "PYTHONPATH": repo_pythonpath()}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-m", "bench.sweep_overhead", "--model", "tiny", "--trials", "2",
                           "--steps", "2"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Sweep overhead (2 CoSENT trials on tiny, 2 steps" in done.stdout
    steady = re.search(r"overhead per trial \(steady state\) = ([0-9.]+) s", done.stdout)
    assert steady is not None and float(steady.group(1)) > 0, done.stdout[-2000:]
