"""The two-matrix Quick-Thoughts objective against a hand computation."""

from __future__ import annotations

import math

import pytest
import torch

from sentsweep.methods.multiview.objective import (
    context_targets,
    multiview_contrastive_loss,
    multiview_scores,
    neighbour_accuracy,
)


def test_targets_are_the_neighbours_one_at_the_edges() -> None:
    t = context_targets(4)
    expected = torch.tensor(
        [[0, 1, 0, 0], [0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5], [0, 0, 1, 0]], dtype=torch.float32
    )
    assert torch.equal(t, expected)


def test_targets_respect_documents() -> None:
    t = context_targets(5, segments=torch.tensor([0, 0, 1, 2, 2]))
    assert t[1].tolist() == [1, 0, 0, 0, 0]  # neighbour 2 is in another document
    assert t[2].sum() == 0  # a one-sentence document: no target
    assert t[3].tolist() == [0, 0, 0, 0, 1]


def test_diagonal_is_a_zero_logit_not_masked() -> None:
    f = torch.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    g = torch.tensor([[0.0, 1.0], [2.0, 1.0], [-1.0, 1.0]])
    s_fg, s_gf = multiview_scores(f, g)
    assert torch.equal(torch.diag(s_fg), torch.zeros(3))
    assert s_fg[0, 1] == pytest.approx(1.0 * 2.0 + 2.0 * 1.0)
    assert torch.equal(s_gf, s_fg.T)


def test_loss_matches_hand_computation() -> None:
    torch.manual_seed(0)
    f, g = torch.randn(5, 3), torch.randn(5, 3)
    loss = multiview_contrastive_loss(f, g)
    total = 0.0
    for i in range(5):
        row_fg = [0.0 if j == i else float(f[i] @ g[j]) for j in range(5)]
        row_gf = [0.0 if j == i else float(g[i] @ f[j]) for j in range(5)]
        z_fg = sum(math.exp(v) for v in row_fg)
        z_gf = sum(math.exp(v) for v in row_gf)
        p = [(math.exp(a) / z_fg + math.exp(b) / z_gf) / 2 for a, b in zip(row_fg, row_gf, strict=True)]
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < 5]
        total += -sum(math.log(p[j]) for j in neighbours) / len(neighbours)
    assert float(loss) == pytest.approx(total / 5, rel=1e-5)


def test_loss_is_symmetric_in_the_views_and_learns() -> None:
    torch.manual_seed(1)
    f = torch.randn(6, 4, requires_grad=True)
    g = torch.randn(6, 4, requires_grad=True)
    with torch.no_grad():
        assert float(multiview_contrastive_loss(f, g)) == pytest.approx(
            float(multiview_contrastive_loss(g, f))
        )
        first = float(multiview_contrastive_loss(f, g))
    for _ in range(30):  # plain gradient descent
        f.grad = g.grad = None
        multiview_contrastive_loss(f, g).backward()
        with torch.no_grad():
            f -= 0.5 * f.grad
            g -= 0.5 * g.grad
    assert float(multiview_contrastive_loss(f, g).detach()) < first
    assert neighbour_accuracy(f, g) > 0.5


def test_loss_errors() -> None:
    with pytest.raises(ValueError, match="two consecutive"):
        multiview_contrastive_loss(torch.randn(1, 3), torch.randn(1, 3))
    with pytest.raises(ValueError, match="must both be"):
        multiview_contrastive_loss(torch.randn(3, 3), torch.randn(3, 2))
    with pytest.raises(ValueError, match="no sentence"):
        multiview_contrastive_loss(torch.randn(2, 3), torch.randn(2, 3), segments=torch.tensor([0, 1]))
