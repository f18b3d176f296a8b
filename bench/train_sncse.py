"""SNCSE training speed: sentsweep's SncseTask in the shared TrainingLoop against a plain transformers loop.

Same model (the offline all-MiniLM-L6-v2, alias ``minilm``), the same Wikipedia sentences and their
negations (computed once, before timing), batch size, max length, loss (InfoNCE + lambda * BML, SNCSE
eq. 7, lambda 1e-3 for a BERT-family model), AdamW at lr 1e-5 without weight decay, gradient clipping at
1.0 and a linear decay, in the same run. Both sides are warmed up identically (``--warmup-steps`` steps
each, untimed) before either is timed; then ``--rounds`` epochs of each alternate (ours, reference, ours,
...), and the ratio is the median of the rounds' ratios (a shared machine's load drifts over minutes).

- ours: :class:`~sentsweep.trainables.sncse.SncseTask` (three prompt views in one stacked batch, the
  training MLP, :func:`~sentsweep.methods.sncse.sncse_objective`) run by
  :class:`~sentsweep.trainables.loop.TrainingLoop` (its end-of-run dev evaluation and checkpoint
  included in the time);
- reference: ``AutoModel`` + a dense/tanh MLP, the SNCSE reference implementation's way of building the
  prompts (template pieces tokenized once, the sentence's ids cut to the budget between them), the loss
  written out, and ``loss.backward(); clip; step`` per batch.

Prints sentences/s (one training pair per sentence, plus its negation), the ratio ours / reference, the
mean training loss of both (the same objective: similar values) and the peak RSS of each phase.

    python -m bench.train_sncse [--sentences 640] [--batch-size 64] [--max-length 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import string
import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bench._measure import Peak
from bench.common import exit_on_sigterm, print_table
from sentsweep.methods.encoders import resolve_model_path
from sentsweep.methods.sncse.model import ANCHOR_TEMPLATE, POSITIVE_TEMPLATE
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.sncse import SNCSE, SncseTask

TEMPERATURE, ALPHA, BETA, LAMBDA, LR = 0.05, 0.1, 0.3, 1e-3, 1e-5


def ours_task(args: argparse.Namespace) -> SncseTask:
    raw = {"model": "minilm", "loss": "bml", "batch_size": args.batch_size, "max_length": args.max_length,
           "lr": LR, "seed": args.seed, "corpus": args.corpus, "max_sentences": args.sentences,
           "eval_every": 10**9, "max_dev_pairs": 50, "diagnostics": False, "data_dir": args.data_dir}
    config = SNCSE.parse(raw)
    return SncseTask(config, log=lambda message: None)


def run_ours(task: SncseTask, steps: int | None) -> tuple[float, float]:
    """Seconds and mean loss of ``steps`` steps (None: one epoch) of the shared loop on ``task``."""
    config = task.config.loop_config()
    config.max_steps = steps
    loop = TrainingLoop(task, config)
    start = time.perf_counter()
    result = loop.run()
    seconds = time.perf_counter() - start
    loop.cleanup()
    return seconds, result.state.history[-1]["train_loss"]


# -- the plain transformers reference -------------------------------------------------------------------
class PromptIds:
    """Token ids of one template filled with sentences cut to fit ``max_length`` (SNCSE's reference way)."""

    def __init__(self, tokenizer, template: str, max_length: int) -> None:
        head, tail = template.split("{sentence}")
        self.tokenizer = tokenizer
        self.head = tokenizer(head.strip(), add_special_tokens=False)["input_ids"]
        self.tail = tokenizer(tail.format(mask=tokenizer.mask_token).strip(), add_special_tokens=False)["input_ids"]
        self.budget = max_length - len(self.head) - len(self.tail) - 2
        self.mask_offset = self.tail.index(tokenizer.mask_token_id)

    def __call__(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        body = self.tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=self.budget)
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        rows = [[cls, *self.head, *ids, *self.tail, sep] for ids in body["input_ids"]]
        masks = [1 + len(self.head) + len(ids) + self.mask_offset for ids in body["input_ids"]]
        return rows, masks


def _punctuated(sentence: str) -> str:
    stripped = sentence.rstrip()
    return sentence if stripped and stripped[-1] in string.punctuation else f"{sentence} ."


def sncse_loss(z1: Tensor, z2: Tensor, z3: Tensor) -> Tensor:
    """InfoNCE(z1, z2) / tau + lambda * BML(cos(z1, z2), cos(z1, z3)), written out (SNCSE eqs. 3-7)."""
    logits = F.normalize(z1, dim=-1) @ F.normalize(z2, dim=-1).T / TEMPERATURE
    infonce = F.cross_entropy(logits, torch.arange(len(z1)))
    d = F.cosine_similarity(z1, z3, dim=-1) - F.cosine_similarity(z1, z2, dim=-1)
    return infonce + LAMBDA * (F.relu(d + ALPHA) + F.relu(-d - BETA)).mean()


class Reference:
    """AutoModel + MLP trained by a plain loop."""

    def __init__(self, max_length: int, seed: int) -> None:
        from transformers import AutoModel, AutoTokenizer

        torch.manual_seed(seed)
        path = resolve_model_path("minilm")
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).train()
        dim = self.model.config.hidden_size
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.anchor = PromptIds(self.tokenizer, ANCHOR_TEMPLATE, max_length)
        self.positive = PromptIds(self.tokenizer, POSITIVE_TEMPLATE, max_length)

    def step_inputs(self, sentences: Sequence[str], negations: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        texts = [_punctuated(s) for s in sentences]
        rows, masks = [], []
        for prompt, batch in ((self.anchor, texts), (self.positive, texts),
                              (self.positive, [_punctuated(n) for n in negations])):
            r, m = prompt(batch)
            rows += r
            masks += m
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [self.tokenizer.pad_token_id] * (width - len(r)) for r in rows])
        attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        return ids, attention, torch.tensor(masks)

    def train(self, batches: list[tuple[list[str], list[str]]]) -> tuple[float, float]:
        """Seconds and mean loss of one pass over ``batches`` (a fresh optimizer and schedule)."""
        params = [*self.model.parameters(), *self.mlp.parameters()]
        optimizer = torch.optim.AdamW(params, lr=LR, weight_decay=0.0)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / len(batches))
        losses = []
        start = time.perf_counter()
        for sentences, negations in batches:
            ids, attention, masks = self.step_inputs(sentences, negations)
            hidden = self.model(input_ids=ids, attention_mask=attention).last_hidden_state
            z = self.mlp(hidden[torch.arange(len(ids)), masks])
            n = len(sentences)
            loss = sncse_loss(z[:n], z[n : 2 * n], z[2 * n :])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            schedule.step()
            losses.append(float(loss.detach()))
        return time.perf_counter() - start, sum(losses) / len(losses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=640)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--warmup-steps", type=int, default=2, help="untimed steps of each side first")
    parser.add_argument("--rounds", type=int, default=3, help="timed epochs of each side, alternating")
    parser.add_argument("--corpus", default="enwiki")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    exit_on_sigterm()

    task = ours_task(args)  # reads the corpus and negates it (cached), before any timing
    assert task.negations is not None
    order = torch.randperm(len(task.sentences), generator=torch.Generator().manual_seed(args.seed)).tolist()
    batches = [
        ([task.sentences[i] for i in chunk], [task.negations[i] for i in chunk])
        for chunk in (order[k : k + args.batch_size] for k in range(0, len(order), args.batch_size))
        if len(chunk) >= 2
    ]
    reference = Reference(args.max_length, args.seed)
    run_ours(task, args.warmup_steps)
    reference.train(batches[: args.warmup_steps])

    rounds = []
    for _ in range(args.rounds):
        with Peak() as peak_ours:
            t_ours, loss_ours = run_ours(task, None)
        with Peak() as peak_ref:
            t_ref, loss_ref = reference.train(batches)
        rounds.append((t_ours, t_ref))
    t_ours, t_ref = (statistics.median(t) for t in zip(*rounds, strict=True))
    ratio = statistics.median(r / o for o, r in rounds)
    n = sum(len(b[0]) for b in batches)
    print_table(
        f"SNCSE training (InfoNCE + BML), {n} {args.corpus} sentences, batch {args.batch_size}, "
        f"max length {args.max_length}, 1 epoch (median of {args.rounds}), torch threads {torch.get_num_threads()}",
        ["trainer", "pairs/s", "seconds", "mean loss (last round)", "peak RSS"],
        [["sentsweep SncseTask + TrainingLoop", n / t_ours, t_ours, loss_ours, peak_ours.label],
         ["plain transformers loop", n / t_ref, t_ref, loss_ref, peak_ref.label]],
    )
    print(
        f"\nratio ours/plain transformers = {ratio:.2f}x (median of {args.rounds} alternating rounds: "
        + ", ".join(f"{r / o:.2f}x" for o, r in rounds) + "; above 1: ours faster)"
    )


if __name__ == "__main__":
    main()
