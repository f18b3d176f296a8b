"""SentEval's classifier on MR: the toolkit's sequential loop against sentsweep's batched fits.

MR features: all-MiniLM-L6-v2 embeddings (mean pooling) of SentEval's MR samples (``--embeddings FILE``
caches them as .npy). The fits are those of SentEval's InnerKFoldClassifier in the ``test`` setting (Adam,
batch 64, tenacity 5, epoch_size 4; 4 L2 values x ``kfold`` inner folds per outer fold, then one refit
per outer fold), for the first ``--outer-folds`` outer folds: the toolkit-style loop
(:func:`~sentsweep.evaluation.senteval.sequential.train_sequential`, one model at a time as SentEval)
and the batched problem (:func:`~sentsweep.evaluation.senteval.batched.train_batched`) train the same
fits; the benchmark checks they agree (best dev counts and epochs) and prints both times and the ratio
(goal >= 5), then times the whole MR protocol batched.

    python -m bench.senteval [--outer-folds 1] [--threads 1] [--embeddings /tmp/mr_minilm.npy]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from bench.common import print_table
from sentsweep.data import resolve_data_dir
from sentsweep.evaluation.senteval import CLASSIFIER_SETTINGS, REG_GRID
from sentsweep.evaluation.senteval.batched import Fit, train_batched
from sentsweep.evaluation.senteval.loaders import load_task
from sentsweep.evaluation.senteval.sequential import train_sequential
from sentsweep.evaluation.senteval.settings import INNER_KFOLD_FOLD_SEED
from sentsweep.evaluation.senteval.validation import (
    inner_kfold_classifier,
    stratified_kfold,
    validation_split_fit,
)


def mr_features(data_dir: str | None, cache: str | None) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM mean-pooled embeddings of MR in SentEval's sample order, and the labels."""
    task = load_task("mr", resolve_data_dir(data_dir)).splits["all"]
    if cache and Path(cache).exists():
        return np.load(cache), task.y
    from sentsweep.methods.encoders import EncoderSettings, TransformerEncoder

    encoder = TransformerEncoder("minilm", EncoderSettings(pooling="mean", max_length=256), device="cpu")
    X = encoder.encode(task.a, batch_size=128)
    if cache:
        np.save(cache, X)
    return X, task.y


def outer_fold_fits(y: np.ndarray, kfold: int, outer_folds: int, seed: int) -> list[Fit]:
    """The fits of the first ``outer_folds`` outer folds: inner fits (every L2 value) and one refit each."""
    fits: list[Fit] = []
    outer = list(stratified_kfold(kfold, y, INNER_KFOLD_FOLD_SEED).split(np.zeros(len(y)), y))[:outer_folds]
    for train, _ in outer:
        inner = list(stratified_kfold(kfold, y[train], INNER_KFOLD_FOLD_SEED).split(train, y[train]))
        fits += [Fit(train[a], train[b], reg) for reg in REG_GRID for a, b in inner]
    # the refit's L2 value does not change its cost much; SentEval's is chosen on the inner folds
    fits += [validation_split_fit(train, REG_GRID[1], seed) for train, _ in outer]
    return fits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--outer-folds", type=int, default=1, help="outer folds timed on both engines")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (both engines)")
    parser.add_argument("--embeddings", default=None, help="cache file (.npy) of the MR embeddings")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--skip-full", action="store_true", help="do not time the whole MR protocol")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    setting = CLASSIFIER_SETTINGS["test"]
    X_np, y = mr_features(args.data_dir, args.embeddings)
    X = torch.from_numpy(np.ascontiguousarray(X_np, dtype=np.float32))
    fits = outer_fold_fits(y, setting.kfold, args.outer_folds, seed=1111)
    yt = torch.from_numpy(y)

    started = time.perf_counter()
    batched = train_batched(X, yt, fits, 2, setting, 1111)
    batched_s = time.perf_counter() - started
    started = time.perf_counter()
    sequential = train_sequential(X, yt, fits, 2, setting, 1111)
    sequential_s = time.perf_counter() - started
    same_counts = int((batched.dev_correct == sequential.dev_correct).sum())
    same_epochs = int((batched.epochs == sequential.epochs).sum())
    rows = [["toolkit-style sequential", len(fits), sequential_s, f"{sequential_s / args.outer_folds * 10:.0f}"],
            ["sentsweep batched", len(fits), batched_s, f"{batched_s / args.outer_folds * 10:.0f}"]]
    print_table(
        f"SentEval 'test' classifier on MR ({len(y)} samples, MiniLM {X.shape[1]}-d), {args.outer_folds} of 10 "
        f"outer folds, torch threads {args.threads}",
        ["engine", "fits", "seconds", "est. 10 folds (s)"], rows)
    print(f"\nratio sequential / batched: {sequential_s / batched_s:.1f}x (goal >= 5); same best dev count in "
          f"{same_counts}/{len(fits)} fits, same epochs in {same_epochs}/{len(fits)}; mean epochs "
          f"{float(np.mean(batched.epochs)):.1f}")
    if not args.skip_full:
        started = time.perf_counter()
        outcome = inner_kfold_classifier(X, y, 2, setting, kfold=setting.kfold, inner_kfold=setting.kfold, seed=1111)
        print(f"whole MR protocol batched (10 outer x 4 L2 x 10 inner + 10 refits): "
              f"{time.perf_counter() - started:.0f} s, acc {outcome.acc:.2f} (dev {outcome.dev_acc:.2f})")


if __name__ == "__main__":
    main()
