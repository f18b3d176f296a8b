"""Gradient caching (``cache_minibatch``): the peak memory of one SNCSE training step at batch 256 against the
same step over the whole batch at once (the reference, measured in the same run), and the loss and gradient
differences between the two.

Each phase runs in a fresh process (``spawn``), so that memory one phase freed but the allocator kept cannot
hide the next phase's peak; a phase builds the model, tokenizes nothing yet, then measures one step (loss and
backward) as the rise of the peak resident set (Linux ``VmHWM``, reset before the step: :mod:`bench._measure`)
above the resident set before it, and on a GPU the rise of CUDA's max allocated. Dropout is off, so that the
two computations are comparable (with dropout on they draw masks in another layout: ``methods/cached_loss.py``).

Model: a random BERT (``--layers`` x ``--hidden``, the MiniLM tokenizer; default 4 x 256, CPU-friendly) in
SNCSE's encoder, BML loss (eq. 7), 256 sentences of the bundled Wikipedia sample, training prompts of 32
tokens; the soft negatives are a fixed stand-in (``"it is not true that " + s``), since memory does not depend
on what the negation rules produce.

    python -m bench.cached_loss [--batch 256] [--minibatches 16,32,64] [--layers 4] [--hidden 256] [--device cpu]
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from bench._measure import Peak
from bench.common import print_table

_STATUS = Path("/proc/self/status")


def current_rss_mib() -> float:
    match = re.search(r"^VmRSS:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    return int(match.group(1)) / 1024 if match else float("nan")


def build_model_dir(directory: Path, layers: int, hidden: int) -> Path:
    """A random BERT of the given size with MiniLM's tokenizer (offline), saved where SncseModel can load it."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    from sentsweep.methods.encoders import resolve_model_path

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
    tokenizer.save_pretrained(directory)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=max(1, hidden // 64), intermediate_size=4 * hidden)
    BertModel(config).save_pretrained(directory, safe_serialization=True)
    return directory


def training_sentences(count: int) -> list[str]:
    from sentsweep.trainables.sncse import corpus_sentences

    sentences = corpus_sentences("enwiki")
    return [sentences[i % len(sentences)] for i in range(count)]


def one_step(model_dir: str, batch: int, minibatch: int | None, device: str) -> dict[str, Any]:
    """One SNCSE step (loss + backward) in this process: its peak memory, seconds, loss and gradients."""
    from sentsweep.methods.cached_loss import cached_loss
    from sentsweep.methods.sncse import SncseModel, sncse_objective

    torch.set_num_threads(2)
    torch.manual_seed(0)  # the training MLP is initialised here: the same in every phase
    model = SncseModel(model_dir, max_length=32, device=device, eval_amp=False).eval()
    sentences = training_sentences(batch)
    negations = [f"it is not true that {s}" for s in sentences]

    def objective(z1: torch.Tensor, z2: torch.Tensor, z3: torch.Tensor | None) -> tuple[torch.Tensor, dict]:
        return sncse_objective("bml", z1, z2, z3, temperature=0.05, alpha=0.1, beta=0.3, lam=1e-3)

    def embed(start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        return model(sentences[start:stop], negations[start:stop])

    if device.startswith("cuda"):
        torch.cuda.synchronize()
    before_rss = current_rss_mib()
    before_cuda = torch.cuda.memory_allocated() / 2**20 if device.startswith("cuda") else None
    started = time.perf_counter()
    with Peak() as peak:
        if minibatch is None:
            loss, _ = objective(*model(sentences, negations))
        else:
            loss, _ = cached_loss(embed, batch, minibatch, objective)
        loss.backward()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    grads = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten().cpu()
                       for p in model.parameters()])
    return {"rss_mib": peak.rss_mib - before_rss, "reset": not peak.since_start,
            "cuda_mib": None if before_cuda is None or peak.cuda_mib is None else peak.cuda_mib - before_cuda,
            "seconds": seconds, "loss": float(loss.detach()), "grads": grads}


def _phase(model_dir: str, batch: int, minibatch: int | None, device: str) -> dict[str, Any]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(one_step, (model_dir, batch, minibatch, device))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--minibatches", default="16,32,64")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = str(build_model_dir(Path(tmp) / "model", args.layers, args.hidden))
        full = _phase(model_dir, args.batch, None, args.device)
        rows = [["whole batch (reference)", f"{full['rss_mib']:.0f}", "1.00",
                 _cuda(full), f"{full['seconds']:.1f}", "-", "-"]]
        for minibatch in (int(m) for m in args.minibatches.split(",")):
            ours = _phase(model_dir, args.batch, minibatch, args.device)
            diff = float((ours["grads"] - full["grads"]).abs().max())
            rows.append([f"cache_minibatch {minibatch}", f"{ours['rss_mib']:.0f}",
                         f"{ours['rss_mib'] / full['rss_mib']:.2f}", _cuda(ours, full),
                         f"{ours['seconds']:.1f}", f"{abs(ours['loss'] - full['loss']):.1e}",
                         f"{diff:.1e} (of {float(full['grads'].abs().max()):.2g})"])
    where = "peak RSS rise" + ("" if full["reset"] else " (peak since process start: no VmHWM reset)")
    print_table(f"bench.cached_loss: one SNCSE (BML) step, batch {args.batch}, BERT {args.layers}x{args.hidden}, "
                f"{args.device}", [f"step ({where})", "MiB", "ratio to whole batch", "CUDA MiB (ratio)", "seconds",
                                   "loss diff", "largest grad diff"], rows)


def _cuda(result: dict[str, Any], reference: dict[str, Any] | None = None) -> str:
    if result["cuda_mib"] is None:
        return "-"
    if reference is None:
        return f"{result['cuda_mib']:.0f}"
    return f"{result['cuda_mib']:.0f} ({result['cuda_mib'] / reference['cuda_mib']:.2f})"


if __name__ == "__main__":
    main()
