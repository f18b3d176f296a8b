"""Checks and precision of the loss inputs, shared by the CoSENT losses.

Every loss computes in at least float32: fp16/bf16 inputs are upcast first (a masking constant such as
1e12 overflows fp16, and ``exp`` of a scaled cosine difference overflows it too), so a loss returns
float32 for half inputs and keeps float64 for float64 inputs. A malformed batch raises ValueError naming
the argument.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def at_least_float32(x: Tensor) -> Tensor:
    """Upcast half/bfloat16 (and integer) tensors to float32; leave float32/float64 alone."""
    if x.dtype in (torch.float32, torch.float64):
        return x
    return x.float()


def check_scores_and_labels(scores: Tensor, labels: Tensor, *, scores_name: str) -> None:
    """Raise ValueError naming the argument when the batch is not two aligned 1-D tensors."""
    if not isinstance(scores, Tensor):
        raise ValueError(f"{scores_name} must be a torch.Tensor, got {type(scores).__name__}")
    if scores.dim() != 1:
        raise ValueError(f"{scores_name} must be 1-D with shape (batch,), got shape {tuple(scores.shape)}")
    check_labels(labels, scores.shape[0], against=scores_name)
    if scores.shape[0] == 0:
        raise ValueError(f"{scores_name} is empty: a loss needs at least one pair")
    if not scores.is_floating_point():
        raise ValueError(f"{scores_name} must be a floating-point tensor, got {scores.dtype}")


def check_embeddings(**named: Tensor) -> None:
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


def ordered_labels(labels: Tensor) -> Tensor:
    """Labels in a dtype where ``<`` is defined (bool -> uint8); values are only compared."""
    return labels.to(torch.uint8) if labels.dtype == torch.bool else labels


def check_labels(labels: Tensor, batch: int, *, against: str) -> None:
    """Raise ValueError unless ``labels`` is a 1-D tensor with one entry per pair."""
    if not isinstance(labels, Tensor):
        raise ValueError(f"labels must be a torch.Tensor, got {type(labels).__name__}")
    if labels.dim() != 1:
        raise ValueError(f"labels must be 1-D with shape (batch,), got shape {tuple(labels.shape)}")
    if labels.shape[0] != batch:
        raise ValueError(
            f"labels must have one entry per pair: {against} has {batch}, labels has {labels.shape[0]}"
        )


def zero_on_graph(*inputs: Tensor) -> Tensor:
    """A scalar 0 on the autograd graph of ``inputs``: sums of empty slices, so no NaN from inf inputs."""
    return sum((x[:0].sum() for x in inputs[1:]), start=inputs[0][:0].sum())


def pair_cosine(u: Tensor, v: Tensor) -> Tensor:
    """Row-wise cosine ``cos(u_i, v_i)`` of two checked ``(batch, dim)`` tensors, in at least float32."""
    check_embeddings(u=u, v=v)
    return F.cosine_similarity(at_least_float32(u), at_least_float32(v), dim=-1)


def binary_targets(labels: Tensor, positive_threshold: float, dtype: torch.dtype) -> Tensor:
    """``y_true = 1[label > positive_threshold]``, the binarisation used by eq. 2 and the triplet miner."""
    return (ordered_labels(labels) > positive_threshold).to(dtype)

