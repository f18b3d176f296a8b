"""CoSENT for an interaction (cross-encoder) model (CoSENT paper, Huang et al. / Su 2022, eq. 11).

``L = log(1 + sum over (i, j) with y_i < y_j of exp(lambda * (f(i) - f(j))))`` on the model's raw pair
scores ``f`` (CLS -> linear -> 1) instead of cosines.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from sentsweep.methods.cosent.losses.base import Loss
from sentsweep.methods.cosent.losses.citations import COSENT
from sentsweep.methods.cosent.losses.cosent import ranking_logsumexp
from sentsweep.methods.cosent.losses.inputs import at_least_float32, check_scores_and_labels


def cross_encoder_cosent_loss(scores: Tensor, labels: Tensor, scale: float) -> Tensor:
    """CoSENT for an interaction (cross-encoder) model (CoSENT paper, Huang et al. / Su 2022, eq. 11).

    The same ranking loss as eq. 10 on the model's raw pair scores ``f(i, j)`` (CLS -> linear -> 1)
    instead of scaled cosines, with lambda as eq. 11 writes it. There is no default here: the trainable
    passes the config's ``scale`` (:class:`~sentsweep.trainables.cosent.CosentConfig`, 20 as for the
    bi-encoder, searched by the ``cosent`` space). For an unbounded linear score lambda rescales the head
    (and so its effective learning rate); 1.0 is the raw-score form of the reference code.

    Args:
        scores: ``(batch,)`` or ``(batch, 1)`` raw scores of the concatenated pairs.
        labels: ``(batch,)`` ordered labels, as for :func:`cosent_loss`.
        scale: lambda, the multiplier on the scores (the trainable's ``scale``); 1.0 = the raw-score form.

    Returns:
        A scalar tensor.
    """
    if isinstance(scores, Tensor) and scores.dim() == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    check_scores_and_labels(scores, labels, scores_name="scores")
    return ranking_logsumexp(at_least_float32(scores) * scale, labels)


class CrossEncoderCoSENTLoss(Loss):
    """Eq. 11: ``log(1 + sum_{y_i < y_j} exp(lambda (f(i) - f(j))))`` on a cross-encoder's pair scores.

    Unlike the pair losses it is called on scores: ``loss(scores, labels)``; see
    :func:`cross_encoder_cosent_loss` (``scale`` is lambda, the config's ``scale``; 1 keeps the raw scores).
    """

    name = "cosent-cross"
    citation = COSENT

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = float(scale)

    def forward(self, scores: Tensor, labels: Tensor) -> Tensor:
        return cross_encoder_cosent_loss(scores, labels, scale=self.scale)

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale}
