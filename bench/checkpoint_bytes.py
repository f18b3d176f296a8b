"""Checkpoint bytes: what a trial writes per report and per trial, against the minimal resume state.

The minimal state an exact resume needs is the weights plus Adam's two moments (3x the fp32 weights; RNG states,
the step counters and the history are a few KB). The bench trains a real model with the shared
:class:`~sentsweep.trainables.loop.TrainingLoop` for ``--reports`` one-step evaluations whose dev scores
improve, then do not, and persists every checkpoint as Tune does (a copy into the trial's storage folder), with
Tune's ``num_to_keep`` retention. It counts the bytes persisted per report (checkpoints, plus the best folder's new
bytes: hard links count 0) and what the trial's folder holds at the end, before and after the sweep's retention.
An older layout is given by its structure for comparison: every report wrote ``model/`` + ``state.pt`` (the same
optimizer state) + ``best/`` (a second copy of the weights whenever the current weights were not the best).

Models: the offline all-MiniLM-L6-v2 (as ``bench.train_cosent`` finds it) and a random BERT-base-sized encoder
(``BertConfig()``: 12 layers x 768, built offline).

    python -m bench.checkpoint_bytes [--models minilm,bert-base] [--reports 4] [--checkpoint-every 1]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from torch import Tensor, nn

from bench.common import print_table
from sentsweep.trainables.checkpoints import MODEL_DIR, BestFolder, StoredFolder
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.trial_config import TrialConfig

#: Dev scores of consecutive reports: improving, then not (the best stays behind the latest weights).
SCORES = (70.0, 72.0, 71.0, 71.5, 73.0, 72.5, 72.8, 72.9)


def build_model(name: str) -> nn.Module:
    from transformers import AutoModel, BertConfig, BertModel

    if name == "bert-base":
        torch.manual_seed(0)
        return BertModel(BertConfig())
    from sentsweep.methods.encoders import resolve_model_path

    return AutoModel.from_pretrained(resolve_model_path(name))


class EncoderTask:
    """Any transformer encoder trained on random token ids (the bytes do not depend on what it learns)."""

    def __init__(self, model: nn.Module, scores: tuple[float, ...]) -> None:
        self.model = model
        self.scores = scores
        self.evaluations = 0
        vocab = int(model.config.vocab_size)
        self.ids = torch.randint(5, vocab, (8, 16), generator=torch.Generator().manual_seed(0))

    def batches(self, epoch: int, generator: torch.Generator) -> list[Tensor]:
        return list(torch.randperm(8, generator=generator).split(2))

    def loss(self, batch: Tensor) -> tuple[Tensor, dict[str, float]]:
        hidden = self.model(input_ids=self.ids[batch]).last_hidden_state
        return hidden.pow(2).mean(), {}

    def evaluate(self) -> dict[str, float]:
        self.evaluations += 1
        return {"score": self.scores[(self.evaluations - 1) % len(self.scores)]}

    def save(self, directory: Path) -> None:
        self.model.save_pretrained(directory, safe_serialization=True)

    def load(self, directory: Path) -> None:
        self.model.load_state_dict(load_file(str(directory / "model.safetensors")), strict=False)


def _new_bytes(folder: Path, seen: set[int]) -> int:
    """Bytes of files under ``folder`` whose inode was not counted before (a hard link adds none)."""
    total = 0
    for path in folder.rglob("*"):
        if path.is_file() and path.stat().st_ino not in seen:
            seen.add(path.stat().st_ino)
            total += path.stat().st_size
    return total


class CountingBest(BestFolder):
    """The trial's best folder, counting the new bytes each :meth:`keep` puts on the storage."""

    def __init__(self, folder: Path, seen: set[int], rows: list[dict[str, float]]) -> None:
        super().__init__(StoredFolder.local(folder))
        self.seen, self.rows = seen, rows

    def keep(self, source: StoredFolder, step: int, value: float) -> None:
        super().keep(source, step, value)
        self.rows[-1]["best"] = float(_new_bytes(Path(self.folder.path), self.seen))


def measure(name: str, reports: int, checkpoint_every: int, num_to_keep: int = 2) -> dict[str, Any]:
    """Train ``reports`` one-step evaluations of model ``name``, persisting checkpoints as Tune does."""
    model = build_model(name)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    root = Path(tempfile.mkdtemp(prefix="bench-checkpoint-bytes-"))
    trial = root / "trial"
    seen: set[int] = set()
    rows: list[dict[str, float]] = []
    kept: list[Path] = []

    def report(metrics: dict[str, float], checkpoint: Path | None) -> StoredFolder | None:
        rows.append({"checkpoint": 0.0, "best": 0.0})
        if checkpoint is None:
            return None
        target = trial / f"checkpoint_{len(rows):06d}"
        shutil.copytree(checkpoint, target)  # what Tune's persist does on a local storage
        rows[-1]["checkpoint"] = float(_new_bytes(target, seen))
        kept.append(target)
        while len(kept) > num_to_keep:  # Tune's CheckpointConfig(num_to_keep)
            shutil.rmtree(kept.pop(0))
        return StoredFolder.local(target)

    config = TrialConfig(lr=1e-5, max_steps=reports, eval_every=1, checkpoint_every=checkpoint_every,
                         warmup_ratio=0.0, amp=False).loop_config()
    config.metric = "score"
    loop = TrainingLoop(EncoderTask(model, SCORES), config, report=report, work_dir=root / "work",
                        best=CountingBest(trial / "best", seen, rows))
    try:
        loop.run()
    finally:
        loop.cleanup()
    files = {p.stat().st_ino: p.stat().st_size for p in trial.rglob("*") if p.is_file()}
    best_bytes = sum(p.stat().st_size for p in (trial / "best").rglob("*") if p.is_file())
    weights_file = sum(p.stat().st_size for p in (kept[-1] / MODEL_DIR).rglob("*") if p.is_file())
    full = max(r["checkpoint"] for r in rows)
    shutil.rmtree(root, ignore_errors=True)
    # Before: every report wrote model/ + state.pt (the same optimizer state) and, when the current weights were
    # not the best, best/ (a second copy of the weights).
    old, best_so_far = [], float("-inf")
    for i in range(len(rows)):
        score = SCORES[i % len(SCORES)]
        old.append(full + (0.0 if score > best_so_far else weights_file))
        best_so_far = max(best_so_far, score)
    return {"model": name, "weights": weights, "reference": 3 * weights,  # fp32 weights + Adam's two moments
            "new": [r["checkpoint"] + r["best"] for r in rows], "old": old, "at_rest": sum(files.values()),
            "old_at_rest": sum(old[-num_to_keep:]), "best_bytes": best_bytes}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="minilm,bert-base")
    parser.add_argument("--reports", type=int, default=4)
    parser.add_argument("--checkpoint-every", type=int, default=1)
    args = parser.parse_args(argv)
    table = []
    for name in args.models.split(","):
        m = measure(name, args.reports, args.checkpoint_every)
        mib = 2**20
        new_max, old_max = max(m["new"]), max(m["old"])
        table.append([
            m["model"], f"{m['weights'] / mib:.0f} MiB", f"{m['reference'] / mib:.0f} MiB",
            f"{new_max / mib:.0f} MiB ({new_max / m['reference']:.3f}x)",
            f"{old_max / mib:.0f} MiB ({old_max / m['reference']:.2f}x)",
            f"{sum(m['new']) / mib:.0f} MiB", f"{sum(m['old']) / mib:.0f} MiB",
            f"{m['at_rest'] / mib:.0f} MiB", f"{m['old_at_rest'] / mib:.0f} MiB",
            f"{m['best_bytes'] / mib:.0f} MiB",
        ])
        print(f"{m['model']}: per report (MiB) after {[round(b / mib) for b in m['new']]}, "
              f"before {[round(b / mib) for b in m['old']]}", flush=True)
    print_table(
        f"Checkpoint bytes ({args.reports} reports, scores {SCORES[:args.reports]}, checkpoint_every "
        f"{args.checkpoint_every}, num_to_keep 2)",
        ["model", "weights", "weights + Adam (reference)", "per report, after (ratio)", "per report, before",
         "per trial written, after", "per trial written, before", "trial folder at the end, after",
         "before", "after the sweep's retention (kept trial)"],
        table,
    )


if __name__ == "__main__":
    main()
