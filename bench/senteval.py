"""SentEval's classifier on the six classification tasks: the toolkit's sequential loop against sentsweep's
batched fits, and (``--table``) the per-task figures of whole evaluations.

Features: all-MiniLM-L6-v2 embeddings (mean pooling, the ``sentsweep evaluate --model minilm`` encoder) of
every SentEval task's sentences, encoded once as :func:`~sentsweep.evaluation.senteval.evaluate_senteval`
encodes them (``--embeddings FILE.npz`` caches them; a cached run gives the figures the command gives).

Timing, per task (MR, CR, SUBJ, MPQA, TREC, MRPC), in SentEval's ``test`` setting (Adam, batch 64, tenacity
5, epoch_size 4): the fits of the task's protocol are enumerated by running the protocol itself with a
recording engine (MR..MPQA: 4 L2 values x 10 inner folds per outer fold, then one refit per outer fold;
TREC, MRPC: 4 x 10 folds of selection on train, then the refit). ``--outer-folds N`` keeps the first N of
the 10 outer folds of MR..MPQA (TREC and MRPC are always whole). The batched engine trains all of them, as
the evaluation does; the toolkit-style sequential loop (the reference) trains ``--sample`` of them, spread
evenly over the list (all of them with ``--sample 0``), within ``--max-seconds`` for the whole run: its
time for the task is the measured mean per fit times the number of fits. The sampled fits must agree
(best dev count and epochs) with the batched ones. The ratio sequential / batched is the speed-up (goal
>= 5).

    python -m bench.senteval [--outer-folds 1] [--sample 4] [--max-seconds 300] [--embeddings FILE.npz]
    python -m bench.senteval --table test,lbfgs --embeddings FILE.npz   # per-task figures, both settings
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from bench.common import print_table
from sentsweep.data import resolve_data_dir
from sentsweep.errors import DataError
from sentsweep.evaluation._encoding import DEFAULT_BATCH_SIZE, encode_lookup
from sentsweep.evaluation.senteval import CLASSIFIER_SETTINGS, SENTEVAL_TASKS, evaluate_senteval, pair_features
from sentsweep.evaluation.senteval.batched import Fit, Fitted, train_batched
from sentsweep.evaluation.senteval.loaders import load_task
from sentsweep.evaluation.senteval.runner import CV_TASKS, NCLASSES
from sentsweep.evaluation.senteval.sequential import train_sequential
from sentsweep.evaluation.senteval.settings import DEFAULT_SEED, ClassifierSetting
from sentsweep.evaluation.senteval.validation import inner_kfold_classifier, kfold_classifier

#: The six classification tasks of the speed comparison.
TIMED_TASKS: tuple[str, ...] = ("mr", "cr", "subj", "mpqa", "trec", "mrpc")


class CachedEmbedder:
    """An embedder answering from a cache of (sentences, matrix): the rows the real encoder gave."""

    def __init__(self, sentences: Sequence[str], matrix: np.ndarray) -> None:
        self.row = {s: i for i, s in enumerate(sentences)}
        self.matrix = matrix

    def encode(self, sentences: list[str]) -> np.ndarray:
        return self.matrix[[self.row[s] for s in sentences]]


def minilm_embeddings(data_dir: str | None, cache: str | None) -> CachedEmbedder:
    """MiniLM (mean pooling) embeddings of every SentEval task's sentences present in the data, computed
    as ``evaluate_senteval`` computes them for all its tasks at once; read from / written to ``cache``."""
    if cache and Path(cache).exists():
        stored = np.load(cache, allow_pickle=False)
        return CachedEmbedder(list(stored["sentences"]), stored["matrix"])
    from sentsweep.trainables.registry import load_encoder

    source = resolve_data_dir(data_dir)
    texts = []
    for name in SENTEVAL_TASKS:
        try:
            texts += load_task(name, source).texts()
        except DataError:  # a task without data (SST2 in the shared data) is left out
            continue
    encoder = load_encoder("minilm", pooling="mean")
    matrix, row = encode_lookup(encoder, texts, DEFAULT_BATCH_SIZE)
    sentences = list(row)
    if cache:
        np.savez(cache, sentences=np.array(sentences), matrix=matrix)
    return CachedEmbedder(sentences, matrix)


@dataclass
class Recorder:
    """A protocol engine that trains nothing: it records each call's fits and answers with zero accuracies
    (the protocol then refits with the first L2 value, whose cost is that of any refit)."""

    calls: list[tuple[Tensor, Tensor, list[Fit], int]] = field(default_factory=list)

    def __call__(self, X: Tensor, y: Tensor, fits: Sequence[Fit], nclasses: int, setting: ClassifierSetting,
                 seed: int) -> Fitted:
        self.calls.append((X, y, list(fits), nclasses))
        m = len(fits)
        return Fitted(torch.zeros(m, nclasses, X.shape[1]), torch.zeros(m, nclasses), np.zeros(m), np.ones(m),
                      np.zeros(m, dtype=int))


def protocol_calls(task: str, embedder: CachedEmbedder, data_dir: str | None,
                   setting: ClassifierSetting) -> list[tuple[Tensor, Tensor, list[Fit], int]]:
    """The engine calls of ``task``'s SentEval protocol: (features, labels, fits, classes) each."""
    data = load_task(task, resolve_data_dir(data_dir))

    def features(split: str) -> tuple[Tensor, np.ndarray]:
        part = data.splits[split]
        u = embedder.encode(part.a)
        X = u if part.b is None else pair_features(u, embedder.encode(part.b))
        return torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)), part.y

    recorder = Recorder()
    if task in CV_TASKS:
        X, y = features("all")
        inner_kfold_classifier(X, y, NCLASSES[task], setting, kfold=setting.kfold, inner_kfold=setting.kfold,
                               seed=DEFAULT_SEED, engine=recorder)
    else:
        (Xtr, ytr), (Xte, yte) = features("train"), features("test")
        kfold_classifier(Xtr, ytr, Xte, yte, NCLASSES[task], setting, kfold=setting.kfold, seed=DEFAULT_SEED,
                         engine=recorder)
    return recorder.calls


def first_outer_folds(calls: list[tuple[Tensor, Tensor, list[Fit], int]], keep: int,
                      total: int) -> list[tuple[Tensor, Tensor, list[Fit], int]]:
    """The first ``keep`` of ``total`` outer folds of a cross-validated task: every call's fits are in
    outer-fold order, in equal shares."""
    return [(X, y, fits[: len(fits) * keep // total], c) for X, y, fits, c in calls]


@dataclass
class TaskTiming:
    task: str
    fits: int
    batched_s: float
    sampled: int
    sequential_s: float  # of the sampled fits
    agree: int

    @property
    def sequential_estimate_s(self) -> float:
        return self.sequential_s / self.sampled * self.fits

    @property
    def ratio(self) -> float:
        return self.sequential_estimate_s / self.batched_s


def time_task(task: str, calls: list[tuple[Tensor, Tensor, list[Fit], int]], setting: ClassifierSetting,
              sample: int, deadline: float) -> TaskTiming:
    """Batched: every call as the evaluation makes it. Sequential: ``sample`` fits spread over the calls
    (0: all), stopping at ``deadline`` (one fit at least); both checked to agree."""
    fitted = []
    started = time.perf_counter()
    for X, y, fits, nclasses in calls:
        fitted.append(train_batched(X, y, fits, nclasses, setting, DEFAULT_SEED))
    batched_s = time.perf_counter() - started
    flat = [(c, i) for c, (_, _, fits, _) in enumerate(calls) for i in range(len(fits))]
    chosen = flat if sample <= 0 or sample >= len(flat) else [flat[int(j)] for j in
                                                             np.linspace(0, len(flat) - 1, sample).round()]
    sequential_s, agree, done = 0.0, 0, 0
    for c, i in chosen:
        X, y, fits, nclasses = calls[c]
        started = time.perf_counter()
        one = train_sequential(X, y, [fits[i]], nclasses, setting, DEFAULT_SEED)
        sequential_s += time.perf_counter() - started
        done += 1
        batched = fitted[c]
        agree += int(one.dev_correct[0] == batched.dev_correct[i] and one.epochs[0] == batched.epochs[i])
        if time.perf_counter() > deadline:
            break
    return TaskTiming(task, len(flat), batched_s, done, sequential_s, agree)


def speed_table(args: argparse.Namespace, embedder: CachedEmbedder) -> None:
    setting = CLASSIFIER_SETTINGS["test"]
    deadline = time.perf_counter() + args.max_seconds
    rows, timings = [], []
    for index, task in enumerate(TIMED_TASKS):
        calls = protocol_calls(task, embedder, args.data_dir, setting)
        if task in CV_TASKS:
            calls = first_outer_folds(calls, args.outer_folds, setting.kfold)
        # the sequential side of each task gets an equal share of what is left of the budget
        share = (deadline - time.perf_counter()) / (len(TIMED_TASKS) - index)
        timing = time_task(task, calls, setting, args.sample, time.perf_counter() + max(share, 0.0))
        timings.append(timing)
        rows.append([task, timing.fits, timing.batched_s, f"{timing.sampled}: {timing.sequential_s:.1f} s",
                     f"{timing.sequential_estimate_s:.0f}", f"{timing.ratio:.1f}x", f"{timing.agree}/{timing.sampled}"])
    batched = sum(t.batched_s for t in timings)
    sequential = sum(t.sequential_estimate_s for t in timings)
    scope = f"first {args.outer_folds} of 10 outer folds of MR..MPQA" if args.outer_folds < 10 else "whole protocols"
    print_table(f"SentEval 'test' classifier, MiniLM features, {scope}; TREC, MRPC whole; torch threads "
                f"{torch.get_num_threads()} (the sequential loop runs on one, as the toolkit's tiny steps do best)",
                ["task", "fits", "batched (s)", "sequential: fits timed", "sequential est. (s)", "ratio",
                 "same best dev and epochs"], rows)
    print(f"\nsix tasks: batched {batched:.0f} s, toolkit-style sequential (est. from the timed fits) "
          f"{sequential:.0f} s: ratio {sequential / batched:.1f}x (goal >= 5)")


def figures_table(args: argparse.Namespace, embedder: CachedEmbedder) -> None:
    """Whole evaluations (every task present in the data) in each named setting, side by side."""
    keys = [("mr_acc", "MR"), ("cr_acc", "CR"), ("subj_acc", "SUBJ"), ("mpqa_acc", "MPQA"), ("trec_acc", "TREC"),
            ("mrpc_acc", "MRPC acc"), ("mrpc_f1", "MRPC F1"), ("senteval_avg", "avg"),
            ("sick_relatedness_pearson", "SICK-R r"), ("sick_relatedness_spearman", "SICK-R rho"),
            ("sick_relatedness_mse", "SICK-R MSE"), ("sick_entailment_acc", "SICK-E")]
    rows = []
    for name in args.table.split(","):
        started = time.perf_counter()
        result = evaluate_senteval(embedder, None, args.data_dir, setting=name)
        seconds = time.perf_counter() - started
        rows.append([name, *(f"{result.metrics[k]:.3f}" if k.endswith("mse") else f"{result.metrics[k]:.2f}"
                             for k, _ in keys if k in result.metrics), f"{seconds:.0f}"])
        print(result.table[["task", "acc", "f1", "pearson", "spearman", "mse", "reg", "fit_seconds"]].to_string(
            index=False), flush=True)
    print_table("SentEval, MiniLM (mean pooling), per task", ["setting", *(label for _, label in keys), "seconds"],
                rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outer-folds", type=int, default=1, help="outer folds of MR..MPQA timed (1..10)")
    parser.add_argument("--sample", type=int, default=4, help="fits per task the sequential loop trains (0: all)")
    parser.add_argument("--max-seconds", type=float, default=300.0,
                        help="time limit of the sequential side over all six tasks (at least one fit each)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--embeddings", default=None, help="cache file (.npz) of the MiniLM embeddings")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--table", default=None, help="settings (e.g. test,lbfgs) whose whole evaluations to "
                        "tabulate per task instead of timing")
    args = parser.parse_args()
    if not 1 <= args.outer_folds <= 10:
        parser.error("--outer-folds must be within 1..10")
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    embedder = minilm_embeddings(args.data_dir, args.embeddings)
    print(f"embeddings: {len(embedder.row)} sentences, {embedder.matrix.shape[1]}-d "
          f"({time.perf_counter() - started:.0f} s{', cached' if args.embeddings else ''})", flush=True)
    if args.table:
        figures_table(args, embedder)
    else:
        speed_table(args, embedder)


if __name__ == "__main__":
    main()
