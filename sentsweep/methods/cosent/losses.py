"""CoSENT and the baselines it is compared with, as pure PyTorch losses.

Paper: X. Huang, H. Peng, D. Zou, Z. Liu, J. Li, K. Liu, J. Wu, J. Su, P. S. Yu, "CoSENT: Consistent
Sentence Embedding via Similarity Ranking" (IEEE TASLP 2024; the loss is Su's 2022 CoSENT,
https://kexue.fm/archives/8847). Equation numbers below are the paper's.

Two layers:

* functional losses, one per paper equation. Each takes tensors and returns a scalar tensor; none reads
  config. ``cosent_loss`` (eq. 10), ``cross_encoder_cosent_loss`` (eq. 11), ``mse_cosine_loss`` (eq. 4),
  ``softmax_classifier_loss`` (eq. 5), ``contrastive_loss`` (eq. 2), ``triplet_loss`` (eq. 6).
* pair losses for a training loop: ``nn.Module`` s with one signature, ``loss(u, v, labels) -> Tensor``
  for a batch of embedded pairs ``(u_i, v_i)`` with labels ``y_i``, built by name with
  ``make_pair_loss`` (registry ``LOSSES``). They are modules so the softmax head's parameters are found
  by ``model.parameters()`` / the optimiser and saved in checkpoints.

Precision: every loss computes in at least float32. fp16/bf16 inputs are upcast first (a masking
constant such as 1e12 overflows fp16, and ``exp`` of a scaled cosine difference overflows it too), so a
loss returns float32 for half inputs and keeps float64 for float64 inputs.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Protocol, runtime_checkable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "LOSSES",
    "CoSENTPairLoss",
    "ContrastivePairLoss",
    "MSEPairLoss",
    "PairLoss",
    "PairLossModule",
    "SoftmaxClassifierHead",
    "SoftmaxPairLoss",
    "TripletPairLoss",
    "contrastive_loss",
    "cosent_loss",
    "cross_encoder_cosent_loss",
    "get_loss",
    "make_pair_loss",
    "mse_cosine_loss",
    "softmax_classifier_loss",
    "triplet_loss",
]

Distance = Literal["euclidean", "cosine"]
Mining = Literal["hardest", "random"]


# --------------------------------------------------------------------------------------------------
# validation and precision helpers
# --------------------------------------------------------------------------------------------------


def _at_least_float32(x: Tensor) -> Tensor:
    """Upcast half/bfloat16 (and integer) tensors to float32; leave float32/float64 alone."""
    if x.dtype in (torch.float32, torch.float64):
        return x
    return x.float()


def _check_scores_and_labels(scores: Tensor, labels: Tensor, *, scores_name: str) -> None:
    """Raise ValueError naming the argument when the batch is not two aligned 1-D tensors."""
    if not isinstance(scores, Tensor):
        raise ValueError(f"{scores_name} must be a torch.Tensor, got {type(scores).__name__}")
    if scores.dim() != 1:
        raise ValueError(f"{scores_name} must be 1-D with shape (batch,), got shape {tuple(scores.shape)}")
    _check_labels(labels, scores.shape[0], against=scores_name)
    if scores.shape[0] == 0:
        raise ValueError(f"{scores_name} is empty: a loss needs at least one pair")
    if not scores.is_floating_point():
        raise ValueError(f"{scores_name} must be a floating-point tensor, got {scores.dtype}")


def _check_embeddings(**named: Tensor) -> None:
    """Raise ValueError unless all named tensors are 2-D (batch, dim) with the same shape."""
    shape: tuple[int, ...] | None = None
    first = ""
    for name, x in named.items():
        if not isinstance(x, Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 2:
            raise ValueError(f"{name} must be 2-D with shape (batch, dim), got shape {tuple(x.shape)}")
        if shape is None:
            shape, first = tuple(x.shape), name
        elif tuple(x.shape) != shape:
            raise ValueError(f"{name} must have the same shape as {first} {shape}, got {tuple(x.shape)}")
        if x.shape[0] == 0:
            raise ValueError(f"{name} is empty: a loss needs at least one pair")


def _ordered_labels(labels: Tensor) -> Tensor:
    """Labels in a dtype where ``<`` is defined (bool -> uint8); values are only compared."""
    return labels.to(torch.uint8) if labels.dtype == torch.bool else labels


def _check_labels(labels: Tensor, batch: int, *, against: str) -> None:
    """Raise ValueError unless ``labels`` is a 1-D tensor with one entry per pair."""
    if not isinstance(labels, Tensor):
        raise ValueError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
    if labels.dim() != 1:
        raise ValueError(f"labels must be 1-D with shape (batch,), got shape {tuple(labels.shape)}")
    if labels.shape[0] != batch:
        raise ValueError(
            f"labels must have one entry per pair: {against} has {batch}, labels has {labels.shape[0]}"
        )


def _zero_on_graph(*inputs: Tensor) -> Tensor:
    """A scalar 0 on the autograd graph of ``inputs``: sums of empty slices, so no NaN from inf inputs."""
    return sum((x[:0].sum() for x in inputs[1:]), start=inputs[0][:0].sum())


# --------------------------------------------------------------------------------------------------
# CoSENT (eq. 10) and its interaction form (eq. 11)
# --------------------------------------------------------------------------------------------------


def _ranking_logsumexp(scores: Tensor, labels: Tensor) -> Tensor:
    """``log(1 + sum_{y_i < y_j} exp(scores_i - scores_j))``: the ranking core of eqs. 10 and 11.

    ``D[i, j] = scores_i - scores_j`` is kept where ``labels_i < labels_j`` (strict: tied labels give
    no term) and set to ``-inf`` elsewhere; the loss is ``logsumexp([0, D.flatten()])``, the leading 0
    being the ``1 +``. Computed in at least float32; masked entries get exactly zero gradient.
    """
    s = _at_least_float32(scores)
    y = _ordered_labels(labels).to(s.device)
    diff = s[:, None] - s[None, :]
    keep = y[:, None] < y[None, :]
    diff = diff.masked_fill(~keep, float("-inf"))
    return torch.logsumexp(torch.cat([diff.new_zeros(1), diff.flatten()]), dim=0)


def cosent_loss(cos_sim: Tensor, labels: Tensor, scale: float = 20.0) -> Tensor:
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
    _check_scores_and_labels(cos_sim, labels, scores_name="cos_sim")
    return _ranking_logsumexp(_at_least_float32(cos_sim) * scale, labels)


def cross_encoder_cosent_loss(scores: Tensor, labels: Tensor, scale: float = 1.0) -> Tensor:
    """CoSENT for an interaction (cross-encoder) model (CoSENT paper, Huang et al. / Su 2022, eq. 11).

    The same ranking loss as eq. 10 on the model's raw pair scores ``f(i, j)`` (CLS -> linear -> 1)
    instead of scaled cosines. The paper prints a lambda in eq. 11; for an unbounded linear score it
    only rescales the head, so the default is 1 (raw scores, as METHODS.md specifies).

    Args:
        scores: ``(batch,)`` or ``(batch, 1)`` raw scores of the concatenated pairs.
        labels: ``(batch,)`` ordered labels, as for :func:`cosent_loss`.
        scale: multiplier on the scores; 1.0 = the raw-score form.

    Returns:
        A scalar tensor.
    """
    if isinstance(scores, Tensor) and scores.dim() == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    _check_scores_and_labels(scores, labels, scores_name="scores")
    return _ranking_logsumexp(_at_least_float32(scores) * scale, labels)


# --------------------------------------------------------------------------------------------------
# baselines (section III-A)
# --------------------------------------------------------------------------------------------------


def mse_cosine_loss(
    cos_sim: Tensor, labels: Tensor, label_max: float = 5.0, label_min: float = 0.0
) -> Tensor:
    """MSE of cosine similarity against the label (CoSENT paper, Huang et al. / Su 2022, eq. 4).

    ``L = mean_i (cos(u_i, v_i) - y_i')^2`` with ``y_i' = (y_i - label_min) / (label_max - label_min)``
    in [0, 1]: the paper writes ``||cos - y_true||^2`` without saying how a 0-5 score meets a cosine,
    and its "SBERT (MSE)" rows are SBERT's CosineSimilarityLoss, which regresses the cosine onto
    score / 5 with a batch-mean MSE. Use ``label_max=5`` for STS-B, ``label_min=1, label_max=5`` for
    SICK-R, ``label_max=1`` for binary labels, ``label_max=2`` for NLI 0/1/2.

    Args:
        cos_sim: ``(batch,)`` cosine similarities.
        labels: ``(batch,)`` graded labels in ``[label_min, label_max]``.
        label_max: the label that maps to cosine 1.
        label_min: the label that maps to cosine 0.

    Returns:
        A scalar tensor: the mean over the batch.
    """
    _check_scores_and_labels(cos_sim, labels, scores_name="cos_sim")
    if not label_max > label_min:
        raise ValueError(f"label_max ({label_max}) must be greater than label_min ({label_min})")
    c = _at_least_float32(cos_sim)
    target = (labels.to(device=c.device, dtype=c.dtype) - label_min) / (label_max - label_min)
    return F.mse_loss(c, target, reduction="mean")


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
    _check_embeddings(u=u, v=v)
    _check_labels(labels, u.shape[0], against="u")
    if classifier.in_features != 3 * u.shape[1]:
        raise ValueError(
            f"classifier.in_features must be 3 * dim = {3 * u.shape[1]} for [u; v; |u-v|], "
            f"got {classifier.in_features}"
        )
    target = _class_indices(labels, classifier.out_features).to(u.device)
    features = _pair_features(_at_least_float32(u), _at_least_float32(v))
    logits = classifier(features.to(classifier.weight.dtype))
    return F.cross_entropy(_at_least_float32(logits), target, reduction="mean")


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


def _binary_targets(labels: Tensor, positive_threshold: float, dtype: torch.dtype) -> Tensor:
    """``y_true = 1[label > positive_threshold]``, the binarisation used by eq. 2 and the triplet miner."""
    return (_ordered_labels(labels) > positive_threshold).to(dtype)


def contrastive_loss(
    cos_sim: Tensor, labels: Tensor, epsilon: float = 0.5, positive_threshold: float = 0.5
) -> Tensor:
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
    (strict). The default 0.5 fits binary 0/1 labels; use the midpoint of the label range otherwise:
    2.5 for STS 0-5 (3, 4, 5 positive), 1 for NLI 0/1/2 (only entailment positive).

    Args:
        cos_sim: ``(batch,)`` cosine similarities.
        labels: ``(batch,)`` labels, binarised as above.
        epsilon: the threshold on a negative pair's cosine.
        positive_threshold: labels strictly above it are positives.

    Returns:
        A scalar tensor: the mean over the batch.
    """
    _check_scores_and_labels(cos_sim, labels, scores_name="cos_sim")
    c = _at_least_float32(cos_sim)
    y = _binary_targets(labels.to(c.device), positive_threshold, c.dtype)
    per_pair = 0.5 * y * (1.0 - c).pow(2) + 0.5 * (1.0 - y) * F.relu(c - epsilon).pow(2)
    return per_pair.mean()


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
    margin: float = 5.0,
    distance: Distance = "euclidean",
) -> Tensor:
    """Triplet loss (CoSENT paper, Huang et al. / Su 2022, eq. 6; Hoffer & Ailon 2014).

    ``L = mean_t max(d(a_t, p_t) - d(a_t, n_t) + margin, 0)``. The paper leaves ``d`` unspecified
    ("the distance of the sentence pair"); the default is SBERT's TripletLoss: Euclidean distance with
    margin 5. ``distance="cosine"`` uses ``1 - cos`` (then a margin of 0.1-0.5 is sensible: it lives
    in [0, 2]).

    Args:
        anchor, positive, negative: ``(n, dim)`` embeddings of the triplets.
        margin: the paper's epsilon in eq. 6.
        distance: ``"euclidean"`` or ``"cosine"``.

    Returns:
        A scalar tensor: the mean over triplets.
    """
    _check_embeddings(anchor=anchor, positive=positive, negative=negative)
    a, p, n = (_at_least_float32(x) for x in (anchor, positive, negative))
    return F.relu(_distance(a, p, distance) - _distance(a, n, distance) + margin).mean()


# --------------------------------------------------------------------------------------------------
# pair losses: one interface for a training loop, built by name
# --------------------------------------------------------------------------------------------------


@runtime_checkable
class PairLoss(Protocol):
    """What a training loop calls: embeddings of a batch of labelled pairs in, scalar loss out."""

    def __call__(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor: ...


class PairLossModule(nn.Module):
    """Base of the pair losses: ``forward(u, v, labels) -> scalar``; ``get_config_dict()`` for logging."""

    name: str = ""

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def get_config_dict(self) -> dict[str, Any]:
        """The loss's hyperparameters (for run tracking)."""
        return {}

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.get_config_dict().items())


def _pair_cosine(u: Tensor, v: Tensor) -> Tensor:
    _check_embeddings(u=u, v=v)
    return F.cosine_similarity(_at_least_float32(u), _at_least_float32(v), dim=-1)


class CoSENTPairLoss(PairLossModule):
    """Eq. 10 on the cosines of the pairs: see :func:`cosent_loss`."""

    name = "cosent"

    def __init__(self, scale: float = 20.0) -> None:
        super().__init__()
        self.scale = float(scale)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return cosent_loss(_pair_cosine(u, v), labels, scale=self.scale)

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale}


class MSEPairLoss(PairLossModule):
    """Eq. 4 on the cosines of the pairs: see :func:`mse_cosine_loss`."""

    name = "mse"

    def __init__(self, label_max: float = 5.0, label_min: float = 0.0) -> None:
        super().__init__()
        if not label_max > label_min:
            raise ValueError(f"label_max ({label_max}) must be greater than label_min ({label_min})")
        self.label_max = float(label_max)
        self.label_min = float(label_min)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return mse_cosine_loss(_pair_cosine(u, v), labels, self.label_max, self.label_min)

    def get_config_dict(self) -> dict[str, Any]:
        return {"label_max": self.label_max, "label_min": self.label_min}


class SoftmaxPairLoss(PairLossModule):
    """Eq. 5 with its own trainable :class:`SoftmaxClassifierHead` (a submodule, so it is optimised)."""

    name = "softmax"

    def __init__(self, dim: int, num_labels: int) -> None:
        super().__init__()
        self.head = SoftmaxClassifierHead(dim, num_labels)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return softmax_classifier_loss(u, v, labels, self.head.classifier)

    def get_config_dict(self) -> dict[str, Any]:
        return {"dim": self.head.dim, "num_labels": self.head.num_labels}


class ContrastivePairLoss(PairLossModule):
    """Eq. 2 on the cosines of the pairs: see :func:`contrastive_loss` (hinge form, binarised labels)."""

    name = "contrastive"

    def __init__(self, epsilon: float = 0.5, positive_threshold: float = 0.5) -> None:
        super().__init__()
        self.epsilon = float(epsilon)
        self.positive_threshold = float(positive_threshold)

    def forward(self, u: Tensor, v: Tensor, labels: Tensor) -> Tensor:
        return contrastive_loss(_pair_cosine(u, v), labels, self.epsilon, self.positive_threshold)

    def get_config_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "positive_threshold": self.positive_threshold}


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

    def __init__(
        self,
        margin: float = 5.0,
        distance: Distance = "euclidean",
        positive_threshold: float = 0.5,
        mining: Mining = "hardest",
    ) -> None:
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
        _check_embeddings(u=u, v=v)
        _check_labels(labels, u.shape[0], against="u")
        uf, vf = _at_least_float32(u), _at_least_float32(v)
        is_positive = _binary_targets(labels.to(u.device), self.positive_threshold, torch.bool)
        anchors = torch.nonzero(is_positive).flatten()
        if anchors.numel() == 0 or u.shape[0] < 2:
            return _zero_on_graph(uf, vf)
        neg = self.negatives(uf, vf, anchors)
        return triplet_loss(uf[anchors], vf[anchors], vf[neg], margin=self.margin, distance=self.distance)

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin,
            "distance": self.distance,
            "positive_threshold": self.positive_threshold,
            "mining": self.mining,
        }


LOSSES: dict[str, type[PairLossModule]] = {
    "cosent": CoSENTPairLoss,
    "mse": MSEPairLoss,
    "softmax": SoftmaxPairLoss,
    "contrastive": ContrastivePairLoss,
    "triplet": TripletPairLoss,
}


def get_loss(name: str) -> type[PairLossModule]:
    """The pair-loss class registered under ``name``; ValueError listing the valid names otherwise."""
    try:
        return LOSSES[name]
    except (KeyError, TypeError):
        valid = ", ".join(repr(n) for n in LOSSES)
        raise ValueError(f"unknown loss {name!r}; valid names: {valid}") from None


def make_pair_loss(
    name: str,
    *,
    scale: float = 20.0,
    label_max: float = 5.0,
    label_min: float = 0.0,
    dim: int | None = None,
    num_labels: int | None = None,
    epsilon: float = 0.5,
    positive_threshold: float | None = None,
    margin: float = 5.0,
    distance: Distance = "euclidean",
    mining: Mining = "hardest",
) -> PairLossModule:
    """Build the pair loss ``name`` (a module: ``loss(u, v, labels) -> scalar``).

    Each loss reads only its own options and ignores the rest, so a training loop can pass one set:
    ``cosent``: scale; ``mse``: label_max, label_min; ``softmax``: dim, num_labels (both required);
    ``contrastive``: epsilon, positive_threshold; ``triplet``: margin, distance, positive_threshold,
    mining. ``positive_threshold`` defaults to the midpoint of ``[label_min, label_max]`` (binary
    labels with ``label_max=1`` -> 0.5; NLI with ``label_max=2`` -> 1, entailment only; STS 0-5 -> 2.5).
    Move the returned module to the model's device, and give its parameters (the softmax head's) to the
    optimiser.
    """
    cls = get_loss(name)
    if positive_threshold is None:
        positive_threshold = (label_min + label_max) / 2.0
    if cls is CoSENTPairLoss:
        return CoSENTPairLoss(scale=scale)
    if cls is MSEPairLoss:
        return MSEPairLoss(label_max=label_max, label_min=label_min)
    if cls is SoftmaxPairLoss:
        if dim is None:
            raise ValueError("dim (the embedding size) is required for the 'softmax' loss")
        if num_labels is None:
            raise ValueError("num_labels is required for the 'softmax' loss (e.g. 3 for NLI)")
        return SoftmaxPairLoss(dim=dim, num_labels=num_labels)
    if cls is ContrastivePairLoss:
        return ContrastivePairLoss(epsilon=epsilon, positive_threshold=positive_threshold)
    return TripletPairLoss(
        margin=margin, distance=distance, positive_threshold=positive_threshold, mining=mining
    )
