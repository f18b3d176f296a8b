"""A training process keeps freed tensor memory: after warm-up, a step's large activations cost no page faults."""

from __future__ import annotations

import os
import subprocess
import sys

from tools.harness.processes import REPO, repo_pythonpath

#: Three training steps of a small MLP whose activations are 41 MB each (2500 rows x 4096), in a worker thread as a
#: Ray Tune trial runs; prints whether the setting is in effect and the minor page faults of the three steps after
#: three warm-up steps.
PROBE = """
import resource, threading, torch
from sentsweep.trainables.allocator import keep_freed_memory
applied = keep_freed_memory()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(256, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 256))
opt = torch.optim.AdamW(net.parameters())
x = torch.randn(2500, 256)
faults = []
def step():
    net(x).square().mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
def trial():
    for _ in range(3):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(3):
        step()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
worker = threading.Thread(target=trial)
worker.start()
worker.join()
print(applied, faults[0])
"""


def _probe(switch: str | None) -> tuple[bool, int]:
    env = {**os.environ, "PYTHONPATH": repo_pythonpath()}
    env.pop("SENTSWEEP_KEEP_FREED_MEMORY", None)
    if switch is not None:
        env["SENTSWEEP_KEEP_FREED_MEMORY"] = switch
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    applied, faults = done.stdout.split()
    return applied == "True", int(faults)


def test_freed_memory_is_reused_without_page_faults_and_the_switch_turns_it_off() -> None:
    applied, kept_faults = _probe(None)
    off, default_faults = _probe("0")
    assert applied and not off
    activation_pages = 2500 * 4096 * 4 // os.sysconf("SC_PAGE_SIZE")
    assert default_faults > 3 * activation_pages  # glibc's default: fresh mmaps, every page faulted in each step
    assert kept_faults < activation_pages // 10  # kept: the same memory, already mapped (measured: 0-6 faults)
