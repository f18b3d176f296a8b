"""Encoding throughput: sentsweep's TransformerEncoder against sentence-transformers' ``encode``.

Same model (the offline all-MiniLM-L6-v2), same sentences (STS-B test, both sides), same batch size,
same run, both warmed up (one untimed pass each). Prints sentences/s of each with the peak RSS of its timed
phase and the ratio ours / reference (goal >= 1.1).

    python -m bench.encode [--batch-size 64] [--limit 2000]
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from bench._measure import Peak
from bench.common import best_of, print_table
from sentsweep.data import scored_pairs
from sentsweep.methods.encoders import TransformerEncoder, resolve_model_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(max(torch.get_num_threads(), 1))

    from sentence_transformers import SentenceTransformer

    pairs = scored_pairs("stsb", "test", data_dir=args.data_dir)
    sentences = [s for p in pairs for s in (p.s1, p.s2)][: args.limit]
    ours = TransformerEncoder("minilm")
    reference = SentenceTransformer(resolve_model_path("minilm"), device=str(ours.device))

    a = ours.encode(sentences, batch_size=args.batch_size, normalize=True)
    b = reference.encode(sentences, batch_size=args.batch_size)
    max_diff = float(np.abs(a - b).max())

    with Peak() as peak_ours:
        t_ours = best_of(lambda: ours.encode(sentences, batch_size=args.batch_size, normalize=True))
    with Peak() as peak_ref:
        t_ref = best_of(lambda: reference.encode(sentences, batch_size=args.batch_size))
    n = len(sentences)
    print_table(
        f"Encoding throughput ({n} STS-B test sentences, batch {args.batch_size}, {ours.device})",
        ["encoder", "sentences/s", "seconds", "peak RSS"],
        [
            ["sentsweep TransformerEncoder", n / t_ours, t_ours, peak_ours.label],
            ["sentence-transformers encode", n / t_ref, t_ref, peak_ref.label],
        ],
    )
    print(
        f"\nratio ours/sentence-transformers = {t_ref / t_ours:.2f}x (goal >= 1.1); "
        f"max |embedding difference| = {max_diff:.2e}"
    )


if __name__ == "__main__":
    main()
