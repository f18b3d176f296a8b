"""SNCSE losses (the SNCSE paper, eqs. 3-9).

``z1``, ``z2``, ``z3`` are the anchor, positive and soft-negative embeddings of a batch (after the
training MLP), each ``(batch, dim)``: row ``i`` of all three comes from sentence ``i``.

- :func:`infonce_loss` (eq. 3): cross-entropy over ``cos(z1_i, z2_j) / tau``, target ``j = i``; the
  soft negatives are not in its denominator.
- :func:`bml_loss` (eqs. 4-6): the bidirectional margin loss on plain cosines (no temperature);
  :func:`bml_terms` its per-pair terms.
- :func:`sncse_loss` (eq. 7): ``L_InfoNCE + lambda * L_BML``.
- :func:`positive_loss` (eq. 8, "PL"): the negation as a pure positive, a second InfoNCE on
  ``(z1, z3)``.
- :func:`negative_loss` (eq. 9, "NL"): the negation as a hard negative, ``cos(z1_i, z3_i) / tau`` as an
  extra logit column of the InfoNCE.

:func:`sncse_objective` selects one of the ablations ``infonce``, ``pl``, ``nl``, ``bml`` (Table 3) by
name. Every loss is computed in float32 (autocast may hand over half-precision embeddings).

Hyperparameters (``temperature`` tau, BML's ``alpha`` and ``beta``, its weight ``lam``) are required
arguments everywhere: their defaults live once, in the SNCSE trainable's config.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from sentsweep.errors import ConfigError

#: The ablations of the paper's Table 3, selectable by name.
LOSS_VARIANTS: tuple[str, ...] = ("bml", "infonce", "pl", "nl")


def _cos_matrix(a: Tensor, b: Tensor) -> Tensor:
    """``(n, m)`` cosines of every row of ``a`` with every row of ``b``, float32."""
    return F.normalize(a.float(), dim=-1) @ F.normalize(b.float(), dim=-1).T


def pair_cosine(a: Tensor, b: Tensor) -> Tensor:
    """Row-wise cosine ``cos(a_i, b_i)``, shape ``(n,)``, float32."""
    return F.cosine_similarity(a.float(), b.float(), dim=-1)


def _check_temperature(temperature: float) -> None:
    if not temperature > 0:
        raise ConfigError(f"must be > 0, got {temperature}", field="temperature")


def infonce_loss(z1: Tensor, z2: Tensor, temperature: float) -> Tensor:
    """InfoNCE (SNCSE eq. 3): ``-mean_i log softmax_j(cos(z1_i, z2_j) / tau)[i]``.

    In-batch negatives only: the soft negatives are not part of this denominator.
    """
    _check_temperature(temperature)
    logits = _cos_matrix(z1, z2) / temperature
    target = torch.arange(logits.size(0), device=logits.device)
    return F.cross_entropy(logits, target)


def bml_loss(cos_pos: Tensor, cos_neg: Tensor, alpha: float, beta: float) -> Tensor:
    """Bidirectional margin loss (SNCSE eqs. 4-6) on plain cosines.

    ``d_i = cos_neg_i - cos_pos_i`` (eq. 4, with ``cos_neg_i = cos(z1_i, z3_i)`` and
    ``cos_pos_i = cos(z1_i, z2_i)``); ``L_BML = mean_i [ReLU(d_i + alpha) + ReLU(-d_i - beta)]``
    (eqs. 5-6). It is zero exactly when ``cos_pos - cos_neg`` lies in ``[alpha, beta]``. Requires
    ``alpha < beta`` (checked once, by the SNCSE trial config); ``beta = 2.0`` means no upper bound.
    """
    return bml_terms(cos_pos, cos_neg, alpha, beta).mean()


def bml_terms(cos_pos: Tensor, cos_neg: Tensor, alpha: float, beta: float) -> Tensor:
    """Per-pair BML (SNCSE eqs. 4-6): ``ReLU(d_i + alpha) + ReLU(-d_i - beta)``, shape ``(n,)``, float32.

    A pair's term is non-zero (BML is *active* on it) exactly when ``cos_pos_i - cos_neg_i`` lies
    outside ``[alpha, beta]``.
    """
    if cos_pos.shape != cos_neg.shape:
        raise ValueError(f"cos_pos has shape {tuple(cos_pos.shape)} but cos_neg {tuple(cos_neg.shape)}")
    d = cos_neg.float() - cos_pos.float()
    return F.relu(d + alpha) + F.relu(-d - beta)


def sncse_loss(
    z1: Tensor,
    z2: Tensor,
    z3: Tensor,
    *,
    temperature: float,
    alpha: float,
    beta: float,
    lam: float,
) -> Tensor:
    """SNCSE's objective (eq. 7): ``L_InfoNCE(z1, z2) + lambda * L_BML(cos(z1, z2), cos(z1, z3))``."""
    return infonce_loss(z1, z2, temperature) + lam * bml_loss(
        pair_cosine(z1, z2), pair_cosine(z1, z3), alpha, beta
    )


def positive_loss(z1: Tensor, z2: Tensor, z3: Tensor, temperature: float) -> Tensor:
    """PL (eq. 8): the negation as a pure positive, ``L_InfoNCE(z1, z2) + L_InfoNCE(z1, z3)``.

    The second term's denominator runs over the batch's negations ``z3_j`` (as the reference code).
    """
    return infonce_loss(z1, z2, temperature) + infonce_loss(z1, z3, temperature)


def negative_loss(z1: Tensor, z2: Tensor, z3: Tensor, temperature: float) -> Tensor:
    """NL (eq. 9): the negation as a hard negative of its own anchor.

    Cross-entropy over the logits ``[cos(z1_i, z2_j) / tau for j] + [cos(z1_i, z3_i) / tau]``,
    target ``j = i`` (the reference's extra column of one hard negative per row).
    """
    _check_temperature(temperature)
    logits = (
        torch.cat(
            [_cos_matrix(z1, z2), pair_cosine(z1, z3).unsqueeze(1)],
            dim=1,
        )
        / temperature
    )
    target = torch.arange(logits.size(0), device=logits.device)
    return F.cross_entropy(logits, target)


def sncse_objective(
    variant: str,
    z1: Tensor,
    z2: Tensor,
    z3: Tensor | None,
    *,
    temperature: float,
    alpha: float,
    beta: float,
    lam: float,
) -> tuple[Tensor, dict[str, float]]:
    """The loss of ablation ``variant`` (``bml``, ``infonce``, ``pl``, ``nl``) and diagnostics.

    ``bml`` is eq. 7, ``infonce`` eq. 3 (``z3`` may be None), ``pl`` eq. 8, ``nl`` eq. 9. Diagnostics
    (detached floats): ``cos_pos``, ``infonce`` and, with ``z3``, ``cos_neg``, ``cos_gap`` (the mean of
    ``cos_pos - cos_neg``), ``bml`` (the unweighted BML term, whatever the variant) and ``bml_active``
    (the share of pairs on which BML is non-zero, :func:`bml_terms`).
    """
    if variant not in LOSS_VARIANTS:
        raise ConfigError(f"unknown loss '{variant}'; choose one of {', '.join(LOSS_VARIANTS)}", field="loss")
    if variant != "infonce" and z3 is None:
        raise ValueError(f"loss '{variant}' needs the soft-negative embeddings z3")
    base = infonce_loss(z1, z2, temperature)
    with torch.no_grad():
        cos_pos = pair_cosine(z1.detach(), z2.detach())
        diagnostics = {"cos_pos": float(cos_pos.mean()), "infonce": float(base.detach())}
    if z3 is not None:
        with torch.no_grad():
            cos_neg = pair_cosine(z1.detach(), z3.detach())
            terms = bml_terms(cos_pos, cos_neg, alpha, beta)
            diagnostics["cos_neg"] = float(cos_neg.mean())
            diagnostics["cos_gap"] = float((cos_pos - cos_neg).mean())
            diagnostics["bml"] = float(terms.mean())
            diagnostics["bml_active"] = float((terms > 0).float().mean())
    if variant == "infonce":
        return base, diagnostics
    assert z3 is not None
    if variant == "bml":
        value = base + lam * bml_loss(pair_cosine(z1, z2), pair_cosine(z1, z3), alpha, beta)  # eq. 7
    elif variant == "pl":
        value = base + infonce_loss(z1, z3, temperature)  # eq. 8
    else:
        value = negative_loss(z1, z2, z3, temperature)  # eq. 9
    return value, diagnostics
