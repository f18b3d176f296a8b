"""Triplet loss (CoSENT paper, Huang et al. / Su 2022, eq. 6; Hoffer & Ailon 2015):
``L = mean_t max(d(a_t, p_t) - d(a_t, n_t) + margin, 0)``, with triplets mined from a batch of pairs.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from sentsweep.methods.cosent.losses.base import PairLossModule
from sentsweep.methods.cosent.losses.citations import TRIPLET
from sentsweep.methods.cosent.losses.inputs import (
    at_least_float32,
    binary_targets,
    check_embeddings,
    check_labels,
    zero_on_graph,
)

Distance = Literal["euclidean", "cosine"]
Mining = Literal["hardest", "random"]


def _distance(a: Tensor, b: Tensor, distance: Distance) -> Tensor:
    """Row-wise distance between ``(n, dim)`` tensors: Euclidean ``||a - b||`` or ``1 - cos(a, b)``.

    Euclidean is the plain ``||a - b||_2`` of sentence-transformers' TripletLoss (6.x; older SBERT added
    ``eps=1e-6`` to ``a - b``); its gradient at ``a == b`` is 0, not NaN.
    """
    if distance == "euclidean":
        return torch.linalg.vector_norm(a - b, dim=-1)
    if distance == "cosine":
        return 1.0 - F.cosine_similarity(a, b, dim=-1)
    raise ValueError(f"distance must be 'euclidean' or 'cosine', got {distance!r}")


def _distance_matrix(a: Tensor, b: Tensor, distance: Distance) -> Tensor:
    """``(n, m)`` distances between every row of ``a`` and every row of ``b``."""
    if distance == "euclidean":
        return torch.cdist(a, b, p=2)
    if distance == "cosine":
        return 1.0 - F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T
    raise ValueError(f"distance must be 'euclidean' or 'cosine', got {distance!r}")


def triplet_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float,
    distance: Distance,
) -> Tensor:
    """Triplet loss (CoSENT paper, Huang et al. / Su 2022, eq. 6; Hoffer & Ailon 2014).

    ``L = mean_t max(d(a_t, p_t) - d(a_t, n_t) + margin, 0)``. The paper leaves ``d`` unspecified
    ("the distance of the sentence pair"); SBERT's TripletLoss uses Euclidean distance with margin 5.
    ``distance="cosine"`` uses ``1 - cos`` (then a margin of 0.1-0.5 is sensible: it lives in [0, 2]).

    Args:
        anchor, positive, negative: ``(n, dim)`` embeddings of the triplets.
        margin: the paper's epsilon in eq. 6.
        distance: ``"euclidean"`` or ``"cosine"``.

    Returns:
        A scalar tensor: the mean over triplets.
    """
    check_embeddings(anchor=anchor, positive=positive, negative=negative)
    a, p, n = (at_least_float32(x) for x in (anchor, positive, negative))
    return F.relu(_distance(a, p, distance) - _distance(a, n, distance) + margin).mean()


class TripletPairLoss(PairLossModule):
    """Eq. 6 on a batch of labelled pairs, with triplets mined in the batch.

    Pair data has no explicit negatives, so: every positive pair (``label > positive_threshold``, the
    same rule as :func:`contrastive_loss`) gives one triplet with anchor ``u_i``, positive ``v_i`` and
    as negative another pair's second sentence ``v_j`` (``j != i``, any label): the one nearest to
    ``u_i`` under ``distance`` (``mining="hardest"``, as SBERT's batch-hard losses) or a uniformly random
    one (``mining="random"``). On NLI data (entailment = positive) a contradiction hypothesis of the
    same premise in the batch is thus a natural hard negative. A batch with no positive pair, or a
    single pair, has no triplet and gives a zero loss that is still on the autograd graph.
    The paper reviews this loss (section III-A) but reports no triplet row in its result tables.
    """

    name = "triplet"
    citation = TRIPLET

    def __init__(self, margin: float, distance: Distance, positive_threshold: float, mining: Mining) -> None:
        super().__init__()
        if distance not in ("euclidean", "cosine"):
            raise ValueError(f"distance must be 'euclidean' or 'cosine', got {distance!r}")
        if mining not in ("hardest", "random"):
            raise ValueError(f"mining must be 'hardest' or 'random', got {mining!r}")
        self.margin = float(margin)
        self.distance: Distance = distance
        self.positive_threshold = float(positive_threshold)
        self.mining: Mining = mining

    def negatives(self, u: Tensor, v: Tensor, anchors: Tensor) -> Tensor:
        """Index ``j != i`` of the in-batch negative ``v_j`` for each anchor index ``i``."""
        batch = v.shape[0]
        if self.mining == "random":
            offset = torch.randint(1, batch, (anchors.shape[0],), device=anchors.device)
            return (anchors + offset) % batch
        with torch.no_grad():
            dist = _distance_matrix(u[anchors], v, self.distance)
            dist[torch.arange(anchors.shape[0], device=dist.device), anchors] = math.inf
            return dist.argmin(dim=1)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        check_embeddings(u=u, v=v)
        check_labels(labels, u.shape[0], against="u")
        uf, vf = at_least_float32(u), at_least_float32(v)
        is_positive = binary_targets(labels.to(u.device), self.positive_threshold, torch.bool)
        anchors = torch.nonzero(is_positive).flatten()
        if anchors.numel() == 0 or u.shape[0] < 2:
            return zero_on_graph(uf, vf)
        neg = self.negatives(uf, vf, anchors)
        return triplet_loss(uf[anchors], vf[anchors], vf[neg], margin=self.margin, distance=self.distance)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin,
            "distance": self.distance,
            "positive_threshold": self.positive_threshold,
            "mining": self.mining,
        }
