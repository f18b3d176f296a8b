"""Gradient caching (methods/cached_loss.py): the full-batch loss and its gradients to 1e-5, dropout replayed,
in a plain module and in SNCSE's task (every loss variant), with the training loop's scaled backward."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from sentsweep.methods.cached_loss import cached_loss, minibatch_bounds
from sentsweep.methods.sncse import infonce_loss, sncse_objective

TOL = 1e-5


class TwoViews(nn.Module):
    """Two dropout views of each row (SimCSE's positives), through a small MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        return self.net(x), self.net(x), None


def _loss(z1, z2, z3):
    return infonce_loss(z1, z2, 0.05), {}


def _grads(model: nn.Module) -> list[torch.Tensor]:
    """Every parameter's gradient (zeros for one the loss does not reach, e.g. BERT's pooler)."""
    return [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in model.parameters()]


def _max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b, strict=True))


def test_bounds_cover_the_batch():
    assert minibatch_bounds(10, 4) == [(0, 4), (4, 8), (8, 10)]
    with pytest.raises(ValueError):
        minibatch_bounds(10, 0)


def test_same_loss_and_gradients_as_the_full_batch_with_dropout_replayed():
    torch.manual_seed(0)
    model, x = TwoViews().train(), torch.randn(20, 8)
    # the reference: the same mini-batch forward passes (same seed, so the same dropout masks), kept with their
    # graph, the loss on the full batch, one backward
    torch.manual_seed(7)
    views = [model(x[s:e]) for s, e in minibatch_bounds(20, 6)]
    reference = infonce_loss(torch.cat([v[0] for v in views]), torch.cat([v[1] for v in views]), 0.05)
    reference.backward()
    expected, after_reference = _grads(model), torch.rand(1)
    model.zero_grad()

    torch.manual_seed(7)
    loss, _ = cached_loss(lambda s, e: model(x[s:e]), 20, 6, _loss)
    (loss * 1024.0).backward()  # a GradScaler's scale reaches the replay as grad_output
    assert abs(float(loss.detach()) - float(reference.detach())) < TOL
    assert _max_diff([g / 1024.0 for g in _grads(model)], expected) < TOL
    assert torch.equal(torch.rand(1), after_reference)  # the replay leaves the generator where the passes left it


def test_dropout_off_equals_one_pass_over_the_whole_batch():
    torch.manual_seed(1)
    model, x = TwoViews().eval(), torch.randn(16, 8)
    full = infonce_loss(*model(x)[:2], 0.05)
    full.backward()
    expected = _grads(model)
    model.zero_grad()
    loss, _ = cached_loss(lambda s, e: model(x[s:e]), 16, 5, _loss)
    loss.backward()
    assert abs(float(loss.detach()) - float(full.detach())) < TOL and _max_diff(_grads(model), expected) < TOL


@pytest.fixture(scope="module")
def tiny_sncse(tiny_bert_dir: Path) -> dict[torch.dtype, nn.Module]:
    """SNCSE on the tiny BERT, dropout off (so that one pass over the whole batch is comparable), per dtype."""
    from sentsweep.methods.sncse import SncseModel

    return {dtype: SncseModel(str(tiny_bert_dir), max_length=24, device="cpu").eval().to(dtype)
            for dtype in (torch.float32, torch.float64)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("variant", ["bml", "infonce", "pl", "nl"])
def test_sncse_losses_equal_the_full_batch_on_a_tiny_bert(tiny_sncse, variant: str, dtype: torch.dtype):
    """Within 1e-5 of the full batch (relative to the largest gradient in float32, where padding a mini-batch
    to its own longest prompt sums in another order; absolute in float64)."""
    model = tiny_sncse[dtype]
    model.zero_grad()
    sentences = ["a man is playing a guitar", "the cat sat on the mat", "a woman is riding a horse",
                 "a dog is eating food", "the child was playing", "a man is riding", "this sentence is true"]
    negations = ["a man is not playing a guitar", "the cat did not sit on the mat", "a woman is not riding",
                 "a dog is not eating food", "the child was not playing", "a man is not riding",
                 "this sentence is not true"]
    negs = negations if variant != "infonce" else None
    args = {"temperature": 0.05, "alpha": 0.1, "beta": 0.3, "lam": 1.0}

    def objective(z1, z2, z3):
        return sncse_objective(variant, z1, z2, z3, **args)

    full, _ = objective(*model(sentences, negs))
    full.backward()
    expected = _grads(model)
    model.zero_grad()

    def embed(start: int, stop: int):
        return model.embed_views(model.tokenize_views(sentences[start:stop], negs[start:stop] if negs else None),
                                 stop - start)

    loss, diagnostics = cached_loss(embed, len(sentences), 3, objective)
    loss.backward()
    loss_diff, grad_diff = abs(float(loss.detach()) - float(full.detach())), _max_diff(_grads(model), expected)
    scale = 1.0 if dtype == torch.float64 else max(float(g.abs().max()) for g in expected)
    print(f"SNCSE {variant} {dtype}: loss difference {loss_diff:.2e}, largest gradient difference {grad_diff:.2e} "
          f"(largest gradient {max(float(g.abs().max()) for g in expected):.3g})")
    assert loss_diff < TOL and grad_diff / scale < TOL
    with torch.no_grad():
        z1, z2, _ = model(sentences, negs)
    assert diagnostics["cos_pos"] == pytest.approx(float(torch.nn.functional.cosine_similarity(z1, z2).mean()),
                                                   abs=TOL)
