"""Softmax classifier on ``[u; v; |u - v|]`` (CoSENT paper, Huang et al. / Su 2022, eq. 5; SBERT's
SoftmaxLoss): ``h = W [u; v; |u - v|]``, ``L = -log softmax(h)_y``.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentsweep.methods.cosent.losses.base import PairLossModule
from sentsweep.methods.cosent.losses.citations import SBERT
from sentsweep.methods.cosent.losses.inputs import at_least_float32, check_embeddings, check_labels


def _pair_features(u: Tensor, v: Tensor) -> Tensor:
    """SBERT's classifier input ``[u; v; |u - v|]`` (CoSENT paper eq. 5)."""
    return torch.cat([u, v, (u - v).abs()], dim=-1)


def _class_indices(labels: Tensor, num_labels: int) -> Tensor:
    """Labels as int64 class indices; ValueError for graded (non-integral) or out-of-range labels."""
    if labels.is_floating_point() and not torch.equal(labels, labels.round()):
        raise ValueError(
            "labels must be integer class indices for the softmax loss (graded scores such as STS "
            "0-5 have no classes; the paper marks softmax 'not available' for them)"
        )
    idx = labels.long()
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= num_labels:
        raise ValueError(
            f"labels must be class indices in [0, {num_labels - 1}] (num_labels={num_labels}), got {lo}..{hi}"
        )
    return idx


def softmax_classifier_loss(u: Tensor, v: Tensor, labels: Tensor, classifier: nn.Linear) -> Tensor:
    """Softmax classifier on ``(u, v, |u - v|)`` (CoSENT paper, Huang et al. / Su 2022, eq. 5).

    ``h = W [u; v; |u - v|]``, ``L = -log softmax(h)_{y}``, averaged over the batch. This is SBERT's
    SoftmaxLoss: ``W`` is an ``nn.Linear(3 * dim, num_labels)`` with a bias (the paper's eq. 5 shows
    only ``W``; SBERT, whose numbers the paper reports, has the bias).

    Args:
        u: ``(batch, dim)`` embeddings of the first sentences.
        v: ``(batch, dim)`` embeddings of the second sentences.
        labels: ``(batch,)`` class indices in ``[0, num_labels)`` (e.g. NLI 0/1/2, binary 0/1).
        classifier: the linear layer ``3 * dim -> num_labels``.

    Returns:
        A scalar tensor: mean cross-entropy.
    """
    check_embeddings(u=u, v=v)
    check_labels(labels, u.shape[0], against="u")
    if classifier.in_features != 3 * u.shape[1]:
        raise ValueError(
            f"classifier.in_features must be 3 * dim = {3 * u.shape[1]} for [u; v; |u-v|], "
            f"got {classifier.in_features}"
        )
    target = _class_indices(labels, classifier.out_features).to(u.device)
    features = _pair_features(at_least_float32(u), at_least_float32(v))
    logits = classifier(features.to(classifier.weight.dtype))
    return F.cross_entropy(at_least_float32(logits), target, reduction="mean")


class SoftmaxClassifierHead(nn.Module):
    """The trainable ``W`` of eq. 5 (CoSENT paper): ``Linear(3 * dim -> num_labels)`` on ``[u; v; |u-v|]``.

    Used only for training with the softmax baseline; it is discarded at inference, where the paper
    (like SBERT) scores pairs by cosine similarity.
    """

    def __init__(self, dim: int, num_labels: int, bias: bool = True) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be a positive embedding size, got {dim}")
        if num_labels < 2:
            raise ValueError(f"num_labels must be at least 2, got {num_labels}")
        self.dim = dim
        self.num_labels = num_labels
        self.classifier = nn.Linear(3 * dim, num_labels, bias=bias)

    def forward(self, u: Tensor, v: Tensor) -> Tensor:
        """Logits ``(batch, num_labels)`` for the pairs ``(u_i, v_i)``."""
        return self.classifier(_pair_features(u, v))

    def loss(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        """Eq. 5 with this head's linear layer: see :func:`softmax_classifier_loss`."""
        return softmax_classifier_loss(u, v, labels, self.classifier)


class SoftmaxPairLoss(PairLossModule):
    """Eq. 5, ``-log softmax(W [u; v; |u - v|])_y``, with its own trainable :class:`SoftmaxClassifierHead`
    (a submodule, so it is optimised). ``dim`` is the embedding size, ``num_labels`` the classes."""

    name = "softmax"
    citation = SBERT

    def __init__(self, dim: int, num_labels: int) -> None:
        super().__init__()
        self.head = SoftmaxClassifierHead(dim, num_labels)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return softmax_classifier_loss(u, v, labels, self.head.classifier)

    def get_config_dict(self) -> dict[str, Any]:
        return {"dim": self.head.dim, "num_labels": self.head.num_labels}
