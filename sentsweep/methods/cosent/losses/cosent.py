"""CoSENT (CoSENT paper, Huang et al. / Su 2022, eq. 10): the ranking loss over the pairs' cosines.

``L = log(1 + sum over (i, j) with y_i < y_j of exp(lambda * (cos_i - cos_j)))``.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from sentsweep.methods.cosent.losses.base import PairLossModule
from sentsweep.methods.cosent.losses.citations import COSENT
from sentsweep.methods.cosent.losses.inputs import (
    at_least_float32,
    check_scores_and_labels,
    ordered_labels,
    pair_cosine,
)


def ranking_logsumexp(scores: Tensor, labels: Tensor) -> Tensor:
    """``log(1 + sum_{y_i < y_j} exp(scores_i - scores_j))``: the ranking core of eqs. 10 and 11.

    ``D[i, j] = scores_i - scores_j`` is kept where ``labels_i < labels_j`` (strict: tied labels give
    no term) and set to ``-inf`` elsewhere; the loss is ``logsumexp([0, D.flatten()])``, the leading 0
    being the ``1 +``. Computed in at least float32; masked entries get exactly zero gradient.
    """
    s = at_least_float32(scores)
    y = ordered_labels(labels).to(s.device)
    diff = s[:, None] - s[None, :]
    keep = y[:, None] < y[None, :]
    diff = diff.masked_fill(~keep, float("-inf"))
    return torch.logsumexp(torch.cat([diff.new_zeros(1), diff.flatten()]), dim=0)


def cosent_loss(cos_sim: Tensor, labels: Tensor, scale: float) -> Tensor:
    """CoSENT loss (CoSENT paper, Huang et al. / Su 2022, eq. 10).

    ``L = log(1 + sum over (i, j) with y_i < y_j of exp(lambda * (cos_i - cos_j)))``: each ordered couple of
    pairs with different labels adds a term, large when the lower-labelled pair has the higher cosine;
    one scalar per batch.

    Args:
        cos_sim: ``(batch,)`` cosine similarities ``cos(u_i, v_i)`` of the pairs (any float dtype;
            computed in at least float32).
        labels: ``(batch,)`` labels that only need an order: STS scores 0-5 as given (do not normalise),
            binary 0/1, NLI contradiction 0 < neutral 1 < entailment 2. Ties contribute nothing.
        scale: lambda, the paper's amplification (inverse temperature); 20 in all its experiments.

    Returns:
        A scalar tensor (float32, or float64 for float64 input). 0 when no two labels differ.
    """
    check_scores_and_labels(cos_sim, labels, scores_name="cos_sim")
    return ranking_logsumexp(at_least_float32(cos_sim) * scale, labels)


class CoSENTPairLoss(PairLossModule):
    """Eq. 10 on the cosines of the pairs: ``log(1 + sum_{y_i < y_j} exp(lambda (cos_i - cos_j)))``.

    See :func:`cosent_loss`; ``scale`` is lambda.
    """

    name = "cosent"
    citation = COSENT

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = float(scale)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return cosent_loss(pair_cosine(u, v), labels, scale=self.scale)

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale}
