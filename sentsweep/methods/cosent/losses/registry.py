"""The losses by name: :data:`LOSSES` (name -> class) and :func:`create_loss` (no if-chain).

Every loss takes its hyperparameters as required arguments: their defaults live once, in the
trainable's config. ``create_loss(name, **kwargs)`` refuses a missing or an unknown argument with one
line naming the loss and what it takes (:func:`loss_parameters`).
"""

from __future__ import annotations

import inspect
from typing import Any

from sentsweep.methods.cosent.losses.base import Loss
from sentsweep.methods.cosent.losses.contrastive import ContrastivePairLoss
from sentsweep.methods.cosent.losses.cosent import CoSENTPairLoss
from sentsweep.methods.cosent.losses.cross_encoder import CrossEncoderCoSENTLoss
from sentsweep.methods.cosent.losses.mse import MSEPairLoss
from sentsweep.methods.cosent.losses.softmax import SoftmaxPairLoss
from sentsweep.methods.cosent.losses.triplet import TripletPairLoss

#: Every loss by its ``name``. All but ``cosent-cross`` are pair losses, ``loss(u, v, labels)``;
#: ``cosent-cross`` (eq. 11) takes a cross-encoder's scores, ``loss(scores, labels)``.
LOSSES: dict[str, type[Loss]] = {
    cls.name: cls
    for cls in (
        CoSENTPairLoss,
        MSEPairLoss,
        SoftmaxPairLoss,
        ContrastivePairLoss,
        TripletPairLoss,
        CrossEncoderCoSENTLoss,
    )
}


def get_loss(name: str) -> type[Loss]:
    """The loss class registered under ``name``; ValueError listing the valid names otherwise."""
    try:
        return LOSSES[name]
    except (KeyError, TypeError):
        valid = ", ".join(repr(n) for n in LOSSES)
        raise ValueError(f"unknown loss {name!r}; valid names: {valid}") from None


def loss_parameters(name: str) -> tuple[str, ...]:
    """The arguments the loss ``name`` takes (all required), in order."""
    signature = inspect.signature(get_loss(name).__init__)
    return tuple(p for p in signature.parameters if p != "self")


def create_loss(name: str, **kwargs: Any) -> Loss:
    """The loss ``name`` built with ``kwargs`` (exactly the arguments of :func:`loss_parameters`).

    Move the returned module to the model's device and give its parameters (the softmax head's) to the
    optimiser.
    """
    expected = loss_parameters(name)
    missing = [p for p in expected if p not in kwargs]
    unknown = sorted(set(kwargs) - set(expected))
    if missing or unknown:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"unexpected {', '.join(unknown)}"] if unknown else []
        raise ValueError(f"loss {name!r} takes ({', '.join(expected)}): {'; '.join(problems)}")
    return get_loss(name)(**kwargs)


def label_midpoint(label_min: float, label_max: float) -> float:
    """The midpoint of a label range: the ``positive_threshold`` that binarises labels for the contrastive
    and triplet losses (binary 0/1 -> 0.5; NLI 0/1/2 -> 1, entailment only; STS 0-5 -> 2.5)."""
    return (label_min + label_max) / 2.0
