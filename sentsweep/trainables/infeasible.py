"""Trials that ask for the impossible: divergence and out-of-memory, the failures a searcher should learn from.

A NaN loss (:class:`~sentsweep.trainables.loop.NonFiniteLossError`) at a high learning rate, or an
out-of-memory error at a large batch, says something about the point in the search space, not about the
machine: the same settings fail the same way again. Such a trial reports itself *infeasible* (its terminal
report carries :data:`INFEASIBLE_KEY` with the kind, :func:`infeasible_kind`), and the platform tells Optuna
a constraint violation instead of a FAIL, which TPE ignores (:mod:`sentsweep.platform.search.searcher`).

Out of memory first gets one more chance: a method may name a cheaper equivalent config
(:meth:`~sentsweep.trainables.method.Method.memory_fallback`, e.g. SNCSE's cached contrastive loss, the same
objective in the memory of a mini-batch); only when that also runs out of memory does the trial count as
infeasible. No Ray import here.
"""

from __future__ import annotations

import gc

import torch

from sentsweep.trainables.loop import NonFiniteLossError
from sentsweep.trainables.report_keys import InfeasibleKind

#: What running out of memory raises: CUDA's allocator (``torch.OutOfMemoryError``, also
#: ``torch.cuda.OutOfMemoryError``) and Python's (``MemoryError``, e.g. a CPU trial's allocation failing).
OUT_OF_MEMORY_ERRORS: tuple[type[BaseException], ...] = (torch.OutOfMemoryError, MemoryError)


def is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, OUT_OF_MEMORY_ERRORS)


def infeasible_kind(exc: BaseException) -> InfeasibleKind | None:
    """``diverged`` (a non-finite loss), ``out_of_memory``, or None for any other failure."""
    if isinstance(exc, NonFiniteLossError):
        return "diverged"
    if is_out_of_memory(exc):
        return "out_of_memory"
    return None


def release_memory() -> None:
    """Give back what a trial that ran out of memory still holds, before it is tried again."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
