"""bench/gpu_check.sh, the GPU check prepared for a machine with a GPU: its GPU plan fits in 8 minutes, and its
CPU fallback runs every measurement here at a tiny size."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "gpu_check.sh"
NAMES = ["first-steps", "packing", "cached-loss", "encode", "train-cosent"]


def _run(*args: str, out: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    if out is not None:
        env["GPU_CHECK_OUT"] = str(out)
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _plan(mode: str) -> dict[str, tuple[int, str]]:
    done = _run(f"--{mode}", "--dry-run")
    assert done.returncode == 0, done.stderr
    steps = re.findall(r"^(\S+) \(limit (\d+)s\): \S+ (.+)$", done.stdout, flags=re.M)
    return {name: (int(limit), command) for name, limit, command in steps}


def test_the_gpu_plan_measures_the_five_things_in_at_most_eight_minutes():
    plan = _plan("gpu")
    assert list(plan) == NAMES
    assert sum(limit for limit, _ in plan.values()) <= 450, "8 minutes with the start-up of each step"
    assert "--device cuda --amp" in plan["first-steps"][1] and "paper-" in plan["first-steps"][1]
    assert "--packed 4" in plan["packing"][1] and "--model minilm" in plan["packing"][1]
    assert "--batch 256" in plan["cached-loss"][1] and "--device cuda" in plan["cached-loss"][1]
    assert "--device cuda" in plan["train-cosent"][1]


def test_an_unknown_argument_is_one_line_and_exit_2():
    done = _run("--fast")
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "--fast" in done.stderr


@pytest.mark.slow
def test_the_cpu_fallback_runs_every_measurement_at_a_tiny_size(tmp_path: Path):
    done = _run("--cpu", out=tmp_path, timeout=2400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    summary = done.stdout.split("gpu check summary", 1)[1]
    assert [line.split(":")[0].strip() for line in summary.splitlines()[1:] if line.strip()] == NAMES
    assert summary.count(": ok in ") == len(NAMES)
    for name in NAMES:
        assert "|" in (tmp_path / f"{name}.txt").read_text(), f"{name} printed no table"
