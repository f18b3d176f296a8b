"""bench.senteval's pieces: the protocol's fits enumerated by the protocol itself, the outer-fold cut, and
the sequential reference agreeing with the batched fits it is timed against (bundled sample, random
features)."""

from __future__ import annotations

import time

import numpy as np

from bench.senteval import CachedEmbedder, first_outer_folds, protocol_calls, time_task
from sentsweep.data import resolve_data_dir
from sentsweep.evaluation.senteval import CLASSIFIER_SETTINGS
from sentsweep.evaluation.senteval.loaders import load_task


def _embedder(task: str) -> CachedEmbedder:
    texts = list(dict.fromkeys(load_task(task, resolve_data_dir(None)).texts()))
    return CachedEmbedder(texts, np.random.default_rng(0).standard_normal((len(texts), 8)).astype(np.float32))


def test_the_protocols_fits_are_enumerated_and_cut_by_outer_fold() -> None:
    setting = CLASSIFIER_SETTINGS["fast"]  # 5 folds: 4 L2 x 5 inner x 5 outer, then 5 refits
    calls = protocol_calls("mr", _embedder("mr"), None, setting)
    assert [len(fits) for _, _, fits, _ in calls] == [4 * 5 * 5, 5]
    first = first_outer_folds(calls, 1, setting.kfold)
    assert [len(fits) for _, _, fits, _ in first] == [20, 1]
    assert [len(fits) for _, _, fits, _ in protocol_calls("trec", _embedder("trec"), None, setting)] == [20, 1]


def test_the_sequential_reference_agrees_with_the_batched_fits() -> None:
    setting = CLASSIFIER_SETTINGS["fast"]
    calls = first_outer_folds(protocol_calls("cr", _embedder("cr"), None, setting), 1, setting.kfold)
    timing = time_task("cr", calls, setting, sample=3, deadline=time.perf_counter() + 600)
    assert (timing.fits, timing.sampled, timing.agree) == (21, 3, 3)
    assert timing.batched_s > 0 and timing.sequential_estimate_s == timing.sequential_s / 3 * 21
