"""CoSENT training speed: sentsweep's loop against sentence-transformers' ``fit`` with ``CoSENTLoss``.

Same model (offline all-MiniLM-L6-v2), same STS-B training pairs, batch size, max length, learning
rate, warmup and weight decay, in the same run. Both sides are warmed up identically before either is
timed: each first trains on ``--warmup-pairs`` pairs (untimed; a fresh model is timed afterwards), so the
short bench measures the same warm state (allocator, thread pools, tokenizer, disk cache) as a full epoch.
Prints training pairs/s of each with the peak RSS of its phase, the ratio ours / reference (goal >= 1.1)
and the STS-B test Spearman of both models (equal quality: +- 0.5).

    python -m bench.train_cosent [--pairs 1600] [--batch-size 16] [--max-length 64] [--warmup-pairs 160]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from bench._measure import Peak
from bench.common import exit_on_sigterm, print_table
from sentsweep.data import scored_pairs
from sentsweep.evaluation.sts import spearman
from sentsweep.methods.encoders import resolve_model_path
from sentsweep.trainables.cosent import COSENT


def _test_spearman(encode, pairs) -> float:
    a = encode([p.s1 for p in pairs])
    b = encode([p.s2 for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return spearman(cos, [p.score for p in pairs])


def run_ours(args: argparse.Namespace, test, pairs: int) -> tuple[float, float]:
    """Seconds of training on the first ``pairs`` pairs and the test Spearman (nan with ``test`` None)."""
    raw = {"model": "minilm", "loss": "cosent", "scale": 20.0, "batch_size": args.batch_size, "epochs": 1,
           "max_length": args.max_length, "lr": 2e-5, "warmup_ratio": 0.1, "seed": args.seed,
           "max_train_pairs": pairs, "eval_every": 10**9, "max_dev_pairs": 50, "test_tasks": "stsb_test",
           "data_dir": args.data_dir}
    config = COSENT.parse(raw)
    task = COSENT.build_task(config)
    from sentsweep.trainables.loop import TrainingLoop

    loop = TrainingLoop(task, config.loop_config())
    start = time.perf_counter()
    loop.run()
    seconds = time.perf_counter() - start
    loop.cleanup()
    encoder = task.net.encoder
    return seconds, _test_spearman(lambda s: encoder.encode(s, batch_size=128), test) if test else float("nan")


def run_reference(args: argparse.Namespace, train, test) -> tuple[float, float]:
    """Seconds of ``fit`` on ``train`` and the test Spearman (nan with ``test`` None)."""
    from sentence_transformers import InputExample, SentenceTransformer
    from sentence_transformers.sentence_transformer import losses
    from torch.utils.data import DataLoader

    torch.manual_seed(args.seed)
    model = SentenceTransformer(resolve_model_path("minilm"), device="cpu")
    model.max_seq_length = args.max_length
    examples = [InputExample(texts=[p.s1, p.s2], label=p.score) for p in train]
    loader = DataLoader(examples, batch_size=args.batch_size, shuffle=True)
    steps = len(loader)
    start = time.perf_counter()
    model.fit([(loader, losses.CoSENTLoss(model, scale=20.0))], epochs=1, warmup_steps=int(0.1 * steps),
              optimizer_params={"lr": 2e-5}, weight_decay=0.01, max_grad_norm=1.0, show_progress_bar=False)
    seconds = time.perf_counter() - start
    return seconds, _test_spearman(lambda s: model.encode(s, batch_size=128), test) if test else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=1600)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--warmup-pairs", type=int, default=160, help="untimed training of each side first")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    exit_on_sigterm()
    train = scored_pairs("stsb", "train", data_dir=args.data_dir)[: args.pairs]
    test = scored_pairs("stsb", "test", data_dir=args.data_dir)
    if args.warmup_pairs:
        run_ours(args, None, args.warmup_pairs)
        run_reference(args, train[: args.warmup_pairs], None)
    with Peak() as peak_ours:
        t_ours, s_ours = run_ours(args, test, args.pairs)
    with Peak() as peak_ref:
        t_ref, s_ref = run_reference(args, train, test)
    n = len(train)
    print_table(
        f"CoSENT training, {n} STS-B pairs, batch {args.batch_size}, max length {args.max_length}, 1 epoch "
        f"(after {args.warmup_pairs} warm-up pairs each)",
        ["trainer", "pairs/s", "seconds", "STS-B test", "peak RSS"],
        [["sentsweep TrainingLoop", n / t_ours, t_ours, s_ours, peak_ours.label],
         ["sentence-transformers fit + CoSENTLoss", n / t_ref, t_ref, s_ref, peak_ref.label]],
    )
    print(f"\nratio ours/sentence-transformers = {t_ref / t_ours:.2f}x (goal >= 1.1); "
          f"test Spearman difference = {s_ours - s_ref:+.2f} (equal quality: within 0.5)")


if __name__ == "__main__":
    main()
