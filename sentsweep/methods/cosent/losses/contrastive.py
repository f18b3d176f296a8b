"""Contrastive loss on cosine similarity (CoSENT paper, Huang et al. / Su 2022, eq. 2; Hadsell et al.
2006): ``L = mean_i [1/2 y (1 - cos_i)^2 + 1/2 (1 - y) max(0, cos_i - epsilon)^2]``.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor

from sentsweep.methods.cosent.losses.base import PairLossModule
from sentsweep.methods.cosent.losses.citations import CONTRASTIVE
from sentsweep.methods.cosent.losses.inputs import (
    at_least_float32,
    binary_targets,
    check_scores_and_labels,
    pair_cosine,
)


def contrastive_loss(cos_sim: Tensor, labels: Tensor, epsilon: float, positive_threshold: float) -> Tensor:
    """Contrastive loss on cosine similarity (CoSENT paper, Huang et al. / Su 2022, eq. 2).

    ``L = mean_i [ 1/2 y (1 - cos_i)^2 + 1/2 (1 - y) max(0, cos_i - epsilon)^2 ]``: positives are pulled
    to cosine 1, negatives pushed down until their cosine is at most the threshold ``epsilon``.

    The paper prints the negative term as ``max(epsilon, cos)^2``. Read literally its gradient is
    ``2 cos`` above epsilon (it drives negatives towards 0, and for epsilon < 0 pulls cosines in
    (epsilon, 0) *up*), which contradicts the sentence after it ("that between negative pairs [decreases]
    to the threshold epsilon") and its own derivation from eq. 1 (``max(0, epsilon - d)^2`` with the
    distance d replaced by a similarity, which flips the hinge). We use the hinge form, which is also
    SBERT's ContrastiveLoss with cosine distance ``d = 1 - cos`` and margin ``1 - epsilon`` (SBERT is
    what the paper trains for its Table I sweep over epsilon in {-1, -0.5, 0, 0.5, 0.9}).

    Binarisation: eq. 2 needs ``y_true`` in {0, 1}; a pair is positive iff ``label > positive_threshold``
    (strict). The midpoint of the label range fits (:func:`~sentsweep.methods.cosent.losses.label_midpoint`):
    0.5 for binary 0/1 labels, 2.5 for STS 0-5 (3, 4, 5 positive), 1 for NLI 0/1/2 (only entailment).

    Args:
        cos_sim: ``(batch,)`` cosine similarities.
        labels: ``(batch,)`` labels, binarised as above.
        epsilon: the threshold on a negative pair's cosine.
        positive_threshold: labels strictly above it are positives.

    Returns:
        A scalar tensor: the mean over the batch.
    """
    check_scores_and_labels(cos_sim, labels, scores_name="cos_sim")
    c = at_least_float32(cos_sim)
    y = binary_targets(labels.to(c.device), positive_threshold, c.dtype)
    per_pair = 0.5 * y * (1.0 - c).pow(2) + 0.5 * (1.0 - y) * F.relu(c - epsilon).pow(2)
    return per_pair.mean()


class ContrastivePairLoss(PairLossModule):
    """Eq. 2 on the cosines of the pairs (hinge form, binarised labels): see :func:`contrastive_loss`."""

    name = "contrastive"
    citation = CONTRASTIVE

    def __init__(self, epsilon: float, positive_threshold: float) -> None:
        super().__init__()
        self.epsilon = float(epsilon)
        self.positive_threshold = float(positive_threshold)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return contrastive_loss(pair_cosine(u, v), labels, self.epsilon, self.positive_threshold)

    def get_config_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "positive_threshold": self.positive_threshold}
