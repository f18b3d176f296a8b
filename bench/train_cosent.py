"""CoSENT training speed: sentsweep's loop against sentence-transformers' ``fit`` with ``CoSENTLoss``.

Same model (offline all-MiniLM-L6-v2), same STS-B training pairs, batch size, max length, learning
rate, warmup and weight decay, in the same run. Each side runs in a process of its own, as a user runs it
(``--side``), warmed up the same way before it is timed: it first trains on ``--warmup-pairs`` pairs (untimed; a
fresh model is timed afterwards), so the short bench measures the warm state (thread pools, tokenizer, disk cache)
of a full epoch. Our loop sets the process's allocator to keep freed memory (:mod:`sentsweep.trainables.allocator`);
sentence-transformers leaves glibc's defaults. A third row runs the reference with the same allocator setting, so
the table shows how much of the ratio is that setting.
Prints training pairs/s of each with the peak RSS of its timed phase, the ratio ours / reference (goal >= 1.1)
and the STS-B test Spearman of both models (equal quality: +- 0.5).

    python -m bench.train_cosent [--pairs 1600] [--batch-size 16] [--max-length 64] [--warmup-pairs 160]
        [--device cuda] [--amp]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from bench._measure import Peak
from bench.common import exit_on_sigterm, print_table
from sentsweep.data import scored_pairs
from sentsweep.evaluation.sts import sample_indices, spearman
from sentsweep.methods.encoders import resolve_model_path
from sentsweep.trainables.allocator import keep_freed_memory
from sentsweep.trainables.cosent import COSENT


def _test_spearman(encode, pairs) -> float:
    a = encode([p.s1 for p in pairs])
    b = encode([p.s2 for p in pairs])
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return spearman(cos, [p.score for p in pairs])


def run_ours(args: argparse.Namespace, test, pairs: int) -> tuple[float, float]:
    """Seconds of training on ``pairs`` pairs (``max_train_pairs``: a seeded sample across the file) and the test
    Spearman (nan with ``test`` None)."""
    raw = {"model": "minilm", "loss": "cosent", "scale": 20.0, "batch_size": args.batch_size, "epochs": 1,
           "max_length": args.max_length, "lr": 2e-5, "warmup_ratio": 0.1, "seed": args.seed,
           "max_train_pairs": pairs, "eval_every": 10**9, "max_dev_pairs": 50, "test_tasks": "stsb_test",
           "data_dir": args.data_dir, "device": args.device, "amp": args.amp}
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
    model = SentenceTransformer(resolve_model_path("minilm"), device=args.device)
    model.max_seq_length = args.max_length
    examples = [InputExample(texts=[p.s1, p.s2], label=p.score) for p in train]
    loader = DataLoader(examples, batch_size=args.batch_size, shuffle=True)
    steps = len(loader)
    # fit names its output folder ./checkpoints/model when given none; it saves nothing there, so a scratch folder
    # keeps the checkout clean without turning checkpoint saving on.
    with tempfile.TemporaryDirectory(prefix="st-fit-") as scratch, contextlib.chdir(scratch):
        start = time.perf_counter()
        model.fit([(loader, losses.CoSENTLoss(model, scale=20.0))], epochs=1, warmup_steps=int(0.1 * steps),
                  optimizer_params={"lr": 2e-5}, weight_decay=0.01, max_grad_norm=1.0, show_progress_bar=False,
                  use_amp=args.amp and args.device.startswith("cuda"))
        seconds = time.perf_counter() - start
    return seconds, _test_spearman(lambda s: model.encode(s, batch_size=128), test) if test else float("nan")


#: The largest test-Spearman difference (x100) at which both trainers count as equally good.
QUALITY_TOLERANCE = 0.5

#: The rows of the table: side (``--side``) -> its label.
SIDES = {
    "ours": "sentsweep TrainingLoop",
    "reference": "sentence-transformers fit + CoSENTLoss",
    "reference-kept": "sentence-transformers, allocator keeping freed memory",
}


def run_side(args: argparse.Namespace) -> dict[str, float | str]:
    """One side in this process: warm-up, then the timed training with its peak RSS and test Spearman."""
    rows = scored_pairs("stsb", "train", data_dir=args.data_dir)
    train = [rows[i] for i in sample_indices(len(rows), args.pairs)]  # the pairs ours trains on (max_train_pairs)
    test = scored_pairs("stsb", "test", data_dir=args.data_dir)[: args.test_pairs]
    if args.side == "reference-kept":
        keep_freed_memory()
    if args.warmup_pairs:
        if args.side == "ours":
            run_ours(args, None, args.warmup_pairs)
        else:
            run_reference(args, train[: args.warmup_pairs], None)
    with Peak() as peak:
        seconds, score = run_ours(args, test, args.pairs) if args.side == "ours" else run_reference(args, train, test)
    return {"side": args.side, "pairs": len(train), "seconds": seconds, "spearman": score, "peak": peak.label}


def _in_own_process(side: str, argv: list[str]) -> dict[str, float | str]:
    done = subprocess.run([sys.executable, "-m", "bench.train_cosent", *argv, "--side", side], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"bench.train_cosent --side {side} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=1600)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--warmup-pairs", type=int, default=160, help="untimed training of each side first")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--test-pairs", type=int, default=None, help="STS-B test pairs scored (default: all)")
    parser.add_argument("--device", default="cpu", help="both sides' device (cuda: the GPU check)")
    parser.add_argument("--amp", action=argparse.BooleanOptionalAction, default=False,
                        help="autocast on CUDA, both sides (sentence-transformers' use_amp)")
    parser.add_argument("--side", choices=sorted(SIDES), default=None, help="run one side here (JSON line)")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    exit_on_sigterm()
    if args.side:
        print(json.dumps(run_side(args)))
        return
    runs = {side: _in_own_process(side, argv) for side in SIDES}
    n = runs["ours"]["pairs"]
    print_table(
        f"CoSENT training, {n} STS-B pairs, batch {args.batch_size}, max length {args.max_length}, 1 epoch "
        f"(after {args.warmup_pairs} warm-up pairs each; each side in its own process)",
        ["trainer", "pairs/s", "seconds", "STS-B test", "peak RSS"],
        [[SIDES[side], n / run["seconds"], run["seconds"], run["spearman"], run["peak"]] for side, run in runs.items()],
    )
    ours, ref, kept = (float(runs[side]["seconds"]) for side in SIDES)
    difference = float(runs["ours"]["spearman"]) - float(runs["reference"]["spearman"])
    print(f"\nratio ours/sentence-transformers = {ref / ours:.2f}x (goal >= 1.1); "
          f"test Spearman difference = {difference:+.2f} ({quality_verdict(difference)}); the reference with the "
          f"allocator setting: {ref / kept:.2f}x its default, ours/that = {kept / ours:.2f}x")


def quality_verdict(difference: float, tolerance: float = QUALITY_TOLERANCE) -> str:
    """Whether a test-Spearman difference (x100) counts as equal quality, said as the bench prints it."""
    if abs(difference) <= tolerance:
        return f"equal quality: within {tolerance}"
    return f"NOT equal quality: beyond {tolerance}, the speed ratio compares different training"


if __name__ == "__main__":
    main()
