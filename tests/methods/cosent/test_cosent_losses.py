"""Tests for sentsweep.methods.cosent.losses: CoSENT (eqs. 10, 11), the paper's baselines (eqs. 2, 4-6), the registry.

CoSENT is checked against sentence-transformers' own ``CoSENTLoss`` (its real code computes the reference
value, from embeddings, with no model call); every baseline against arithmetic written out in the test.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from sentsweep.methods.cosent import (
    LOSSES,
    CoSENTPairLoss,
    CrossEncoderCoSENTLoss,
    PairLoss,
    PairLossModule,
    SoftmaxClassifierHead,
    SoftmaxPairLoss,
    TripletPairLoss,
    contrastive_loss,
    cosent_loss,
    create_loss,
    cross_encoder_cosent_loss,
    get_loss,
    label_midpoint,
    loss_parameters,
    mse_cosine_loss,
    softmax_classifier_loss,
    triplet_loss,
)

st_losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")


def _st_cosent(u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor, scale: float = 20.0) -> torch.Tensor:
    """sentence-transformers' CoSENTLoss on precomputed embeddings (the stand-in model is never called)."""
    loss = st_losses.CoSENTLoss(model=nn.Identity(), scale=scale)
    return loss.compute_loss_from_embeddings([u, v], labels)


def _st_cosent_on_scores(scores: torch.Tensor, labels: torch.Tensor, scale: float = 20.0) -> torch.Tensor:
    """ST's CoSENTLoss on given similarity scores: its similarity_fct just returns them."""
    loss = st_losses.CoSENTLoss(model=nn.Identity(), scale=scale, similarity_fct=lambda a, b: a[:, 0])
    return loss.compute_loss_from_embeddings([scores[:, None], scores[:, None]], labels)


def _batch(seed: int, n: int, dim: int = 8, dtype: torch.dtype = torch.float64):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(n, dim, generator=g, dtype=dtype)
    v = u + 1.5 * torch.randn(n, dim, generator=g, dtype=dtype)
    return u, v, g


# --------------------------------------------------------------------------------------------------
# CoSENT vs sentence-transformers
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 5, 16, 64])
def test_cosent_matches_sentence_transformers_sts_labels_with_ties(seed: int, n: int) -> None:
    u, v, g = _batch(seed, n)
    labels = torch.randint(0, 6, (n,), generator=g).double()  # STS 0-5, many ties
    ours = cosent_loss(F.cosine_similarity(u, v, dim=-1), labels, scale=20.0)
    ref = _st_cosent(u, v, labels)
    assert ours.dtype == torch.float64
    assert ours.item() == pytest.approx(ref.item(), abs=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("scale", [1.0, 5.0, 20.0, 40.0])
def test_cosent_matches_sentence_transformers_float32_scores(seed: int, scale: float) -> None:
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand(32, generator=g) * 2 - 1
    labels = torch.randint(0, 3, (32,), generator=g).float()
    ours = cosent_loss(scores, labels, scale=scale)
    ref = _st_cosent_on_scores(scores, labels, scale=scale)
    assert ours.dtype == torch.float32
    assert ours.item() == pytest.approx(ref.item(), rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("labels", [[0, 1, 2, 2, 1, 0, 2], [1, 0, 0, 1, 1, 0, 0]])
def test_cosent_matches_sentence_transformers_nli_and_binary_int_labels(labels: list[int]) -> None:
    u, v, _ = _batch(7, len(labels))
    y = torch.tensor(labels)
    ours = cosent_loss(F.cosine_similarity(u, v, dim=-1), y, scale=20.0)
    assert ours.item() == pytest.approx(_st_cosent(u, v, y).item(), abs=1e-6)
    # bool labels order False < True, as ST reads them
    if set(labels) <= {0, 1}:
        assert cosent_loss(F.cosine_similarity(u, v, dim=-1), y.bool(), scale=20.0).item() == pytest.approx(ours.item())


@pytest.mark.parametrize("n", [1, 2, 9])
def test_cosent_all_tied_labels_is_log_one(n: int) -> None:
    u, v, _ = _batch(3, n)
    labels = torch.full((n,), 3.0, dtype=torch.float64)
    ours = cosent_loss(F.cosine_similarity(u, v, dim=-1), labels, scale=20.0)
    ref = _st_cosent(u, v, labels)
    assert ours.item() == 0.0
    assert ref.item() == 0.0


def test_cosent_hand_computed_sts_batch() -> None:
    cos = torch.tensor([0.9, 0.2, 0.5], dtype=torch.float64)
    labels = torch.tensor([5.0, 1.0, 3.0])
    # pairs with y_i < y_j: (1, 0), (1, 2), (2, 0); terms exp(20 * (cos_i - cos_j))
    terms = [math.exp(20 * (0.2 - 0.9)), math.exp(20 * (0.2 - 0.5)), math.exp(20 * (0.5 - 0.9))]
    expected = math.log(1 + sum(terms))
    assert cosent_loss(cos, labels, scale=20.0).item() == pytest.approx(expected, rel=1e-12)
    # float32 input: same value to float32 precision (20 * rounding error of 0.9 is ~1e-7 absolute)
    assert cosent_loss(cos.float(), labels, scale=20.0).item() == pytest.approx(expected, abs=1e-6)


def test_cosent_binary_labels_is_eq8_pos_neg_sum() -> None:
    cos = [0.8, 0.1, 0.3, 0.6, -0.2]
    labels = [1, 0, 1, 0, 0]
    lam = 20.0
    total = sum(
        math.exp(lam * (cos[k] - cos[i]))
        for i in range(5)
        if labels[i] == 1
        for k in range(5)
        if labels[k] == 0
    )
    got = cosent_loss(torch.tensor(cos, dtype=torch.float64), torch.tensor(labels), scale=lam)
    assert got.item() == pytest.approx(math.log1p(total), rel=1e-12)


# --------------------------------------------------------------------------------------------------
# precision, gradients, invariances
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_cosent_half_input_is_finite_and_equals_float32(half: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    # spread of 2 in cosine -> scaled differences of +-40: exp(40) and a 1e12 mask overflow fp16
    cos = (torch.rand(64, generator=g) * 2 - 1).to(half)
    labels = torch.randint(0, 6, (64,), generator=g).float()
    got = cosent_loss(cos, labels, scale=20.0)
    assert got.dtype == torch.float32
    assert torch.isfinite(got)
    assert got.item() == cosent_loss(cos.float(), labels, scale=20.0).item()
    assert got.item() == pytest.approx(_st_cosent_on_scores(cos.float(), labels).item(), rel=1e-6)


def test_cosent_gradient_is_finite_and_orders_the_pairs() -> None:
    cos = torch.tensor([0.9, 0.2, 0.5, 0.5, 0.1], requires_grad=True)
    labels = torch.tensor([5.0, 1.0, 3.0, 3.0, 0.0])
    cosent_loss(cos, labels, scale=20.0).backward()
    grad = cos.grad
    assert grad is not None and torch.isfinite(grad).all()
    # descent raises the top-ranked pair's cosine and lowers the bottom-ranked one's
    assert grad[0] < 0 < grad[4]
    assert grad.sum().item() == pytest.approx(0.0, abs=1e-6)  # depends only on differences


def test_cosent_gradient_through_embeddings_fp16_and_ties() -> None:
    u, v, g = _batch(5, 16, dtype=torch.float16)
    u.requires_grad_(True)
    labels = torch.randint(0, 2, (16,), generator=g)
    loss = create_loss("cosent", scale=20.0)(u, v, labels)
    loss.backward()
    assert torch.isfinite(loss) and u.grad is not None and torch.isfinite(u.grad).all()


def test_cosent_all_tied_gradient_is_zero_not_nan() -> None:
    cos = torch.tensor([0.3, -0.4, 0.9], requires_grad=True)
    loss = cosent_loss(cos, torch.ones(3), scale=20.0)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(cos.grad, torch.zeros(3))


def test_cosent_invariances() -> None:
    g = torch.Generator().manual_seed(11)
    cos = torch.rand(20, generator=g, dtype=torch.float64) * 2 - 1
    labels = torch.randint(0, 6, (20,), generator=g).double()
    base = cosent_loss(cos, labels, scale=20.0)
    # only the label order matters (STS scores need no normalisation)
    assert cosent_loss(cos, labels / 5.0, scale=20.0).item() == pytest.approx(base.item(), rel=1e-12)
    assert cosent_loss(cos, torch.exp(labels) - 7, scale=20.0).item() == pytest.approx(base.item(), rel=1e-12)
    # only cosine differences matter; scale and cosine trade off
    assert cosent_loss(cos + 0.25, labels, scale=20.0).item() == pytest.approx(base.item(), rel=1e-9)
    assert cosent_loss(cos / 2, labels, scale=40.0).item() == pytest.approx(base.item(), rel=1e-12)
    # order of the batch does not matter
    perm = torch.randperm(20, generator=g)
    assert cosent_loss(cos[perm], labels[perm], scale=20.0).item() == pytest.approx(base.item(), rel=1e-12)
    # a perfectly ranked batch: the loss falls to 0 as lambda grows
    ranked = torch.randperm(20, generator=g).double()  # 20 distinct labels
    ranked_cos = ranked / 20 - 0.5  # same order, neighbours 0.05 apart
    losses = [cosent_loss(ranked_cos, ranked, scale=s).item() for s in (1.0, 5.0, 20.0, 1000.0)]
    assert losses == sorted(losses, reverse=True) and losses[-1] < 1e-6


def test_cross_encoder_form_equals_cosent_with_scale_one() -> None:
    g = torch.Generator().manual_seed(2)
    scores = torch.randn(24, generator=g) * 3
    labels = torch.randint(0, 3, (24,), generator=g)
    expected = cosent_loss(scores, labels, scale=1.0)
    assert cross_encoder_cosent_loss(scores, labels, scale=1.0).item() == expected.item()
    assert cross_encoder_cosent_loss(scores[:, None], labels, scale=1.0).item() == expected.item()  # (batch, 1) head
    got = cross_encoder_cosent_loss(scores, labels, scale=20.0)
    assert got.item() == cosent_loss(scores, labels, scale=20.0).item()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cosent_loss(torch.zeros(3, 2), torch.zeros(3), scale=20.0), "cos_sim must be 1-D"),
        (lambda: cosent_loss(torch.zeros(3), torch.zeros(3, 1), scale=20.0), "labels must be 1-D"),
        (lambda: cosent_loss(torch.zeros(3), torch.zeros(4), scale=20.0), "labels must have one entry per pair"),
        (lambda: cosent_loss(torch.zeros(0), torch.zeros(0), scale=20.0), "cos_sim is empty"),
        (lambda: cosent_loss(torch.zeros(3, dtype=torch.long), torch.zeros(3), scale=20.0), "floating-point"),
        (lambda: cross_encoder_cosent_loss(torch.zeros(3, 2), torch.zeros(3), scale=1.0), "scores must be 1-D"),
        (lambda: mse_cosine_loss(torch.zeros(2), torch.zeros(2), label_max=0.0, label_min=0.0), "label_max"),
        (
            lambda: triplet_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3, 3), 5.0, "euclidean"),
            "negative must",
        ),
    ],
)
def test_bad_shapes_raise_value_error_naming_the_argument(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------------------------------
# baselines, against hand arithmetic
# --------------------------------------------------------------------------------------------------


def test_mse_cosine_loss_hand_computed() -> None:
    cos = torch.tensor([0.9, 0.2, 0.5])
    labels = torch.tensor([5.0, 1.0, 3.0])  # / 5 -> 1.0, 0.2, 0.6
    expected = ((0.9 - 1.0) ** 2 + (0.2 - 0.2) ** 2 + (0.5 - 0.6) ** 2) / 3
    assert mse_cosine_loss(cos, labels, label_max=5.0, label_min=0.0).item() == pytest.approx(expected, rel=1e-5)
    # SICK-R 1-5: (y - 1) / 4
    sick = torch.tensor([5.0, 1.8, 3.4])  # -> 1.0, 0.2, 0.6
    got = mse_cosine_loss(cos, sick, label_max=5.0, label_min=1.0)
    assert got.item() == pytest.approx(expected, rel=1e-5)


def test_mse_matches_sentence_transformers_cosine_similarity_loss() -> None:
    u, v, g = _batch(4, 16)
    labels = torch.rand(16, generator=g, dtype=torch.float64) * 5
    ref = st_losses.CosineSimilarityLoss(model=nn.Identity()).compute_loss_from_embeddings([u, v], labels / 5)
    ours = mse_cosine_loss(F.cosine_similarity(u, v, dim=-1), labels, label_max=5.0, label_min=0.0)
    assert ours.item() == pytest.approx(ref.item(), abs=1e-6)


def test_softmax_classifier_loss_hand_computed() -> None:
    u = torch.tensor([[1.0], [2.0], [0.0]])
    v = torch.tensor([[0.0], [1.0], [3.0]])
    labels = torch.tensor([0, 2, 1])
    classifier = nn.Linear(3, 3)
    with torch.no_grad():
        classifier.weight.copy_(torch.eye(3))
        classifier.bias.copy_(torch.tensor([0.0, 0.5, -0.5]))
    # [u; v; |u-v|] = [1,0,1], [2,1,1], [0,3,3]; h = features + bias
    h = [[1.0, 0.5, 0.5], [2.0, 1.5, 0.5], [0.0, 3.5, 2.5]]
    ce = [-(h[i][y] - math.log(sum(math.exp(x) for x in h[i]))) for i, y in enumerate([0, 2, 1])]
    expected = sum(ce) / 3
    assert softmax_classifier_loss(u, v, labels, classifier).item() == pytest.approx(expected, rel=1e-6)
    # integral float labels are accepted, graded ones are not
    got = softmax_classifier_loss(u, v, labels.float(), classifier)
    assert got.item() == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="integer class indices"):
        softmax_classifier_loss(u, v, torch.tensor([0.0, 2.5, 1.0]), classifier)
    with pytest.raises(ValueError, match=r"class indices in \[0, 2\]"):
        softmax_classifier_loss(u, v, torch.tensor([0, 3, 1]), classifier)
    with pytest.raises(ValueError, match="in_features"):
        softmax_classifier_loss(u, v, labels, nn.Linear(4, 3))


def test_softmax_head_and_pair_loss_train_their_parameters() -> None:
    head = SoftmaxClassifierHead(dim=4, num_labels=3)
    assert head.classifier.in_features == 12 and head.classifier.out_features == 3
    u, v, _ = _batch(0, 6, dim=4, dtype=torch.float32)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    assert head(u, v).shape == (6, 3)
    assert head.loss(u, v, labels).item() == softmax_classifier_loss(u, v, labels, head.classifier).item()
    pair = create_loss("softmax", dim=4, num_labels=3)
    assert isinstance(pair, SoftmaxPairLoss)
    params = list(pair.parameters())
    assert sum(p.numel() for p in params) == 12 * 3 + 3
    pair(u, v, labels).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in params)


def test_contrastive_loss_hand_computed_binary_and_graded() -> None:
    cos = torch.tensor([0.9, 0.2, 0.7])
    # eq. 2, hinge form, epsilon = 0.5: positive 1/2 (1 - 0.9)^2; negative below epsilon 0;
    # negative above epsilon 1/2 (0.7 - 0.5)^2
    expected = (0.5 * (1 - 0.9) ** 2 + 0.0 + 0.5 * (0.7 - 0.5) ** 2) / 3
    binary = torch.tensor([1, 0, 0])
    got = contrastive_loss(cos, binary, epsilon=0.5, positive_threshold=0.5)
    assert got.item() == pytest.approx(expected, rel=1e-5)
    # STS 0-5 binarised at 2.5, strictly: 2.5 itself is a negative
    sts = torch.tensor([4.0, 1.0, 2.5])
    got = contrastive_loss(cos, sts, epsilon=0.5, positive_threshold=2.5)
    assert got.item() == pytest.approx(expected, rel=1e-5)
    # epsilon = 0 (the paper's Fig. 5 setting): every negative with positive cosine is pushed
    expected0 = (0.5 * (1 - 0.9) ** 2 + 0.5 * 0.2**2 + 0.5 * 0.7**2) / 3
    got = contrastive_loss(cos, binary, epsilon=0.0, positive_threshold=0.5)
    assert got.item() == pytest.approx(expected0, rel=1e-5)


@pytest.mark.parametrize("epsilon", [-0.5, 0.0, 0.5, 0.9])
def test_contrastive_matches_sentence_transformers_cosine_distance(epsilon: float) -> None:
    u, v, g = _batch(6, 16)
    labels = torch.randint(0, 2, (16,), generator=g)
    st = st_losses.ContrastiveLoss(
        model=nn.Identity(),
        distance_metric=st_losses.SiameseDistanceMetric.COSINE_DISTANCE,
        margin=1.0 - epsilon,
    )
    ref = st.compute_loss_from_embeddings([u, v], labels)
    ours = contrastive_loss(F.cosine_similarity(u, v, dim=-1), labels, epsilon=epsilon, positive_threshold=0.5)
    assert ours.item() == pytest.approx(ref.item(), abs=1e-6)


def test_the_default_contrastive_baseline_is_the_papers() -> None:
    """The CoSENT paper keeps epsilon at 0 in every evaluation, and its reference code trains the baseline with
    sentence-transformers' ContrastiveLoss, cosine distance, margin 1."""
    from sentsweep.trainables.cosent import CosentConfig

    u, v, g = _batch(7, 16)
    labels = torch.randint(0, 2, (16,), generator=g)
    st = st_losses.ContrastiveLoss(model=nn.Identity(), distance_metric=st_losses.SiameseDistanceMetric.COSINE_DISTANCE,
                                   margin=1.0)
    ours = contrastive_loss(F.cosine_similarity(u, v, dim=-1), labels, epsilon=CosentConfig().epsilon,
                            positive_threshold=0.5)
    assert ours.item() == pytest.approx(st.compute_loss_from_embeddings([u, v], labels).item(), abs=1e-6)


def test_triplet_loss_hand_computed() -> None:
    anchor = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    positive = torch.tensor([[3.0, 4.0], [1.0, 0.0], [1.0, 2.0]])
    negative = torch.tensor([[1.0, 0.0], [0.0, 10.0], [2.0, 1.0]])
    # Euclidean: (5 - 1 + 5)+, (1 - 10 + 5)+, (1 - 1 + 5)+ = 9, 0, 5
    expected = (9.0 + 0.0 + 5.0) / 3
    got = triplet_loss(anchor, positive, negative, margin=5.0, distance="euclidean")
    assert got.item() == pytest.approx(expected, rel=1e-5)
    # cosine distance 1 - cos: a=(1,1); p=(1,2): cos = 3/sqrt(10); n=(2,1): cos = 3/sqrt(10) -> (0 + 0.3)+
    a, p, n = anchor[2:], positive[2:], negative[2:]
    assert triplet_loss(a, p, n, margin=0.3, distance="cosine").item() == pytest.approx(0.3, abs=1e-6)
    a2 = torch.tensor([[1.0, 0.0]])
    p2 = torch.tensor([[1.0, 1.0]])  # 1 - 1/sqrt(2)
    n2 = torch.tensor([[0.0, 1.0]])  # 1 - 0
    expected2 = max((1 - 1 / math.sqrt(2)) - 1 + 0.5, 0.0)
    got = triplet_loss(a2, p2, n2, margin=0.5, distance="cosine")
    assert got.item() == pytest.approx(expected2, rel=1e-6)


def test_triplet_matches_sentence_transformers_triplet_loss() -> None:
    u, v, g = _batch(8, 10)
    w = torch.randn(10, 8, generator=g, dtype=torch.float64)
    ref = st_losses.TripletLoss(model=nn.Identity()).compute_loss_from_embeddings([u, v, w], torch.zeros(10))
    assert triplet_loss(u, v, w, margin=5.0, distance="euclidean").item() == pytest.approx(ref.item(), abs=1e-9)
    cos_ref = st_losses.TripletLoss(
        model=nn.Identity(), distance_metric=st_losses.TripletDistanceMetric.COSINE, triplet_margin=0.3
    ).compute_loss_from_embeddings([u, v, w], torch.zeros(10))
    got = triplet_loss(u, v, w, margin=0.3, distance="cosine")
    assert got.item() == pytest.approx(cos_ref.item(), abs=1e-9)


def test_triplet_pair_loss_mines_hardest_in_batch_negative() -> None:
    u = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    v = torch.tensor([[1.0, 0.0], [10.0, 1.0], [0.0, 12.0]])
    labels = torch.tensor([1, 1, 0])  # anchors: pairs 0 and 1
    # anchor 0: v1 at sqrt(101), v2 at 12 -> v1; anchor 1: v0 at 9, v2 at sqrt(244) -> v0; d(a, p) = 1
    expected = ((1 - math.sqrt(101) + 20) + (1 - 9 + 20)) / 2
    loss = TripletPairLoss(margin=20.0, distance="euclidean", positive_threshold=0.5, mining="hardest")
    assert loss(u, v, labels).item() == pytest.approx(expected, rel=1e-5)
    assert loss.negatives(u, v, torch.tensor([0, 1])).tolist() == [1, 0]


def test_triplet_pair_loss_random_mining_and_no_anchor_batches() -> None:
    u, v, _ = _batch(1, 8, dtype=torch.float32)
    u.requires_grad_(True)
    random_loss = TripletPairLoss(margin=5.0, distance="euclidean", positive_threshold=0.5, mining="random")
    torch.manual_seed(0)
    idx = random_loss.negatives(u, v, torch.arange(8))
    assert (idx != torch.arange(8)).all()
    # no positive pair, or a single pair: no triplet, a zero that still backpropagates
    for uu, vv, labels in [(u, v, torch.zeros(8)), (u[:1], v[:1], torch.ones(1))]:
        loss = TripletPairLoss(5.0, "euclidean", 0.5, "hardest")(uu, vv, labels)
        assert loss.item() == 0.0
        loss.backward()
    assert torch.equal(u.grad, torch.zeros_like(u))


# --------------------------------------------------------------------------------------------------
# registry and the pair-loss interface
# --------------------------------------------------------------------------------------------------


#: One full set of arguments per loss (each loss takes exactly its own; NLI labels 0 < 1 < 2).
ARGUMENTS: dict[str, dict[str, object]] = {
    "cosent": {"scale": 20.0},
    "cosent-cross": {"scale": 1.0},
    "mse": {"label_max": 2.0, "label_min": 0.0},
    "softmax": {"dim": 8, "num_labels": 3},
    "contrastive": {"epsilon": 0.5, "positive_threshold": 1.0},
    "triplet": {"margin": 5.0, "distance": "euclidean", "positive_threshold": 1.0, "mining": "hardest"},
}
PAIR_LOSSES = sorted(set(LOSSES) - {"cosent-cross"})


def test_registry_names_and_unknown_name() -> None:
    assert set(LOSSES) == set(ARGUMENTS)
    assert get_loss("cosent") is CoSENTPairLoss and LOSSES["cosent-cross"] is CrossEncoderCoSENTLoss
    with pytest.raises(ValueError, match="unknown loss 'infonce'.*'cosent'.*'triplet'"):
        get_loss("infonce")
    with pytest.raises(ValueError, match="valid names"):
        create_loss("CoSENT", scale=20.0)


def test_create_loss_takes_exactly_the_required_arguments() -> None:
    assert loss_parameters("triplet") == ("margin", "distance", "positive_threshold", "mining")
    with pytest.raises(ValueError, match=r"'softmax' takes \(dim, num_labels\): missing dim"):
        create_loss("softmax", num_labels=3)
    with pytest.raises(ValueError, match="missing scale; unexpected margin"):
        create_loss("cosent", margin=1.0)
    for name in LOSSES:  # no hyperparameter has a default here: the config owns them
        with pytest.raises(ValueError, match="missing"):
            create_loss(name)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_loss_has_its_paper_and_its_config(name: str) -> None:
    loss_fn = create_loss(name, **ARGUMENTS[name])
    assert loss_fn.name == name and loss_fn.citation.startswith("@") and "title" in loss_fn.citation
    assert loss_fn.get_config_dict() == {k: v for k, v in ARGUMENTS[name].items()}
    assert name in repr(loss_fn) or type(loss_fn).__name__ in repr(loss_fn)


@pytest.mark.parametrize("name", PAIR_LOSSES)
def test_every_pair_loss_is_a_module_returning_a_differentiable_scalar(name: str) -> None:
    loss_fn = create_loss(name, **ARGUMENTS[name])
    assert isinstance(loss_fn, PairLossModule) and isinstance(loss_fn, PairLoss)
    u, v, _ = _batch(9, 12, dtype=torch.float32)
    u.requires_grad_(True)
    labels = torch.tensor([0, 1, 2] * 4)
    loss = loss_fn(u, v, labels)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert u.grad is not None and torch.isfinite(u.grad).all() and u.grad.abs().sum() > 0


def test_losses_equal_their_functional_forms() -> None:
    u, v, g = _batch(10, 16, dtype=torch.float32)
    labels = torch.randint(0, 6, (16,), generator=g).float()
    cos = F.cosine_similarity(u, v, dim=-1)
    assert create_loss("cosent", scale=30.0)(u, v, labels).item() == cosent_loss(cos, labels, 30.0).item()
    mse = create_loss("mse", label_max=5.0, label_min=0.0)
    assert mse(u, v, labels).item() == mse_cosine_loss(cos, labels, 5.0, 0.0).item()
    contrastive = create_loss("contrastive", epsilon=0.3, positive_threshold=label_midpoint(0.0, 5.0))
    assert contrastive.get_config_dict() == {"epsilon": 0.3, "positive_threshold": 2.5}
    assert contrastive(u, v, labels).item() == contrastive_loss(cos, labels, 0.3, 2.5).item()
    scores = cos * 3
    cross = create_loss("cosent-cross", scale=2.0)
    assert cross(scores, labels).item() == cross_encoder_cosent_loss(scores, labels, 2.0).item()
