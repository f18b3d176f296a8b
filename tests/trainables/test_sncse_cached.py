"""SNCSE's ``cache_minibatch``: the task's loss and gradients unchanged with gradient caching on, and a trial out
of memory tried once more with it (``Method.memory_fallback``) before it counts as infeasible."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sentsweep.trainables.method import failure_report, retry_out_of_memory
from sentsweep.trainables.sncse import SNCSE, SncseConfig, SncseTask

pytestmark = pytest.mark.usefixtures("private_cache")


def test_task_loss_with_caching_equals_one_pass(tiny_bert_dir: Path):
    config = SncseConfig(model=str(tiny_bert_dir), loss="infonce", batch_size=8, max_sentences=16, device="cpu",
                         max_dev_pairs=10)
    task = SncseTask(config, log=lambda message: None)
    task.model.eval()  # dropout off: the one-pass masks differ in layout from the mini-batches'
    batch = task.batches(0, torch.Generator().manual_seed(0))[0]
    results = []
    for cached in (None, 3):
        task.config = config.model_copy(update={"cache_minibatch": cached})
        task.model.zero_grad()
        loss, diagnostics = task.loss(batch)
        loss.backward()
        grads = [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in task.model.parameters()]
        results.append((float(loss.detach()), grads, diagnostics))
    (one_loss, one_grads, one_diag), (cached_loss, cached_grads, cached_diag) = results
    assert cached_loss == pytest.approx(one_loss, abs=1e-5)
    largest = max(float(g.abs().max()) for g in one_grads)
    assert max(float((a - b).abs().max()) for a, b in zip(one_grads, cached_grads, strict=True)) < 1e-5 * largest
    assert cached_diag == pytest.approx(one_diag, abs=1e-5)


def test_out_of_memory_is_tried_once_more_with_caching_then_infeasible():
    config = SNCSE.parse({"batch_size": 256})
    tried: list[int | None] = []

    def attempt(c: SncseConfig) -> str:
        tried.append(c.cache_minibatch)
        if c.cache_minibatch is None:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.00 GiB")
        return "trained"

    assert retry_out_of_memory(SNCSE, config, attempt, log=lambda message: None) == "trained"
    assert tried == [None, 64]

    def always(c: SncseConfig) -> str:
        tried.append(c.cache_minibatch)
        raise MemoryError("cannot allocate")

    tried.clear()
    with pytest.raises(MemoryError) as info:
        retry_out_of_memory(SNCSE, config, always, log=lambda message: None)
    assert tried == [None, 64]  # once more, not a loop
    assert failure_report("stsb_dev", info.value)["infeasible"] == "out_of_memory"


def test_memory_fallback_quarters_the_mini_batch():
    assert SNCSE.memory_fallback(SNCSE.parse({"batch_size": 256, "cache_minibatch": 64})).cache_minibatch == 16
    assert SNCSE.memory_fallback(SNCSE.parse({"batch_size": 2, "cache_minibatch": 2})) is None
