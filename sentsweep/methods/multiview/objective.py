"""The two-matrix Quick-Thoughts objective of the multi-view paper (section 3.1, Figure 1).

For a batch X of B consecutive sentences and the two views f, g (each ``(B, d)``)::

    S_fg = f(X) g(X)^T,   S_gf = g(X) f(X)^T                      (B x B scores)
    diag(S_fg) = diag(S_gf) = 0      (kept in the softmax as a logit 0, not masked to -inf)
    p = (softmax_row(S_fg) + softmax_row(S_gf)) / 2
    loss = mean_i  - sum_j t_ij log p_ij

with the soft target of row i uniform over its neighbours i-1 and i+1 (one of them at the batch edges),
i.e. ``p(s+ | s, negatives)`` of Logeswaran & Lee (2018) with the anchor and the candidates encoded by
different views, the two directions' probabilities averaged.

Batches are consecutive sentences of a document-ordered corpus. When the batch's document ids are given
(``segments``), a neighbour in another document is not a target, and a sentence whose neighbours are
all in other documents (a one-sentence document inside the batch) is left out of the mean.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def context_targets(
    batch_size: int, segments: Tensor | None = None, device: torch.device | None = None
) -> Tensor:
    """``(B, B)`` soft targets: row i uniform over i-1 and i+1 (within the same segment when given);
    rows without a neighbour are all zero."""
    device = segments.device if segments is not None else device
    eye_up = torch.eye(batch_size, device=device).roll(1, dims=1)  # (i, i+1)
    eye_up[-1, 0] = 0.0
    mask = eye_up + eye_up.T
    if segments is not None:
        mask = mask * (segments.unsqueeze(0) == segments.unsqueeze(1)).to(mask.dtype)
    count = mask.sum(dim=1, keepdim=True)
    return mask / count.clamp_min(1.0)


def multiview_scores(f: Tensor, g: Tensor) -> tuple[Tensor, Tensor]:
    """``S_fg`` and ``S_gf`` with their diagonals set to 0 (float32, whatever the input dtype)."""
    s_fg = f.float() @ g.float().T
    eye = torch.eye(s_fg.shape[0], dtype=torch.bool, device=s_fg.device)
    s_fg = s_fg.masked_fill(eye, 0.0)
    return s_fg, s_fg.T


def multiview_log_probs(f: Tensor, g: Tensor) -> Tensor:
    """``log p`` with ``p = (softmax(S_fg) + softmax(S_gf)) / 2``, computed stably in log space."""
    s_fg, s_gf = multiview_scores(f, g)
    return torch.logaddexp(s_fg.log_softmax(dim=1), s_gf.log_softmax(dim=1)) - math.log(2.0)


def multiview_contrastive_loss(f: Tensor, g: Tensor, segments: Tensor | None = None) -> Tensor:
    """The multi-view Quick-Thoughts loss (module docstring): cross-entropy of the averaged two-view
    probabilities against the neighbour targets, averaged over the rows that have a target."""
    if f.shape != g.shape or f.ndim != 2:
        raise ValueError(f"f and g must both be (batch, dim), got {tuple(f.shape)} and {tuple(g.shape)}")
    if f.shape[0] < 2:
        raise ValueError("a batch needs at least two consecutive sentences")
    targets = context_targets(f.shape[0], segments, device=f.device)
    has_target = targets.sum(dim=1) > 0
    if not bool(has_target.any()):
        raise ValueError("no sentence of the batch has a neighbour in its own document")
    nll = -(targets * multiview_log_probs(f, g)).sum(dim=1)
    return nll[has_target].mean()


def neighbour_accuracy(f: Tensor, g: Tensor, segments: Tensor | None = None) -> float:
    """Share of sentences whose most probable candidate (under the averaged p) is a true neighbour."""
    with torch.no_grad():
        targets = context_targets(f.shape[0], segments, device=f.device)
        has_target = targets.sum(dim=1) > 0
        best = multiview_log_probs(f, g).argmax(dim=1)
        hit = targets.gather(1, best.unsqueeze(1)).squeeze(1) > 0
        return float(hit[has_target].float().mean()) if bool(has_target.any()) else float("nan")
