"""MSE of the pairs' cosine against the label (CoSENT paper, Huang et al. / Su 2022, eq. 4; SBERT's
CosineSimilarityLoss): ``L = mean_i (cos(u_i, v_i) - (y_i - label_min) / (label_max - label_min))^2``.
"""

from __future__ import annotations

from typing import Any

import torch.nn.functional as F
from torch import Tensor

from sentsweep.methods.cosent.losses.base import PairLossModule
from sentsweep.methods.cosent.losses.citations import SBERT
from sentsweep.methods.cosent.losses.inputs import at_least_float32, check_scores_and_labels, pair_cosine


def check_label_range(label_min: float, label_max: float) -> None:
    """Raise ValueError unless ``label_max > label_min`` (the label range maps onto cosine [0, 1])."""
    if not label_max > label_min:
        raise ValueError(f"label_max ({label_max}) must be greater than label_min ({label_min})")


def mse_cosine_loss(cos_sim: Tensor, labels: Tensor, label_max: float, label_min: float) -> Tensor:
    """MSE of cosine similarity against the label (CoSENT paper, Huang et al. / Su 2022, eq. 4).

    ``L = mean_i (cos(u_i, v_i) - y_i')^2`` with ``y_i' = (y_i - label_min) / (label_max - label_min)``
    in [0, 1]: the paper writes ``||cos - y_true||^2`` without saying how a 0-5 score meets a cosine,
    and its "SBERT (MSE)" rows are SBERT's CosineSimilarityLoss, which regresses the cosine onto
    score / 5 with a batch-mean MSE. Use ``label_max=5`` for STS-B and for SICK-R (the CoSENT reference divides
    SICK's 1..5 by 5 too: targets 0.2..1.0), ``label_max=1`` for binary labels, ``label_max=2`` for NLI 0/1/2.

    Args:
        cos_sim: ``(batch,)`` cosine similarities.
        labels: ``(batch,)`` graded labels in ``[label_min, label_max]``.
        label_max: the label that maps to cosine 1.
        label_min: the label that maps to cosine 0.

    Returns:
        A scalar tensor: the mean over the batch.
    """
    check_scores_and_labels(cos_sim, labels, scores_name="cos_sim")
    check_label_range(label_min, label_max)
    c = at_least_float32(cos_sim)
    target = (labels.to(device=c.device, dtype=c.dtype) - label_min) / (label_max - label_min)
    return F.mse_loss(c, target, reduction="mean")


class MSEPairLoss(PairLossModule):
    """Eq. 4 on the cosines of the pairs: ``mean_i (cos_i - y_i')^2``, labels rescaled to [0, 1].

    See :func:`mse_cosine_loss`.
    """

    name = "mse"
    citation = SBERT

    def __init__(self, label_max: float, label_min: float) -> None:
        super().__init__()
        check_label_range(label_min, label_max)
        self.label_max = float(label_max)
        self.label_min = float(label_min)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return mse_cosine_loss(pair_cosine(u, v), labels, self.label_max, self.label_min)

    def get_config_dict(self) -> dict[str, Any]:
        return {"label_max": self.label_max, "label_min": self.label_min}
