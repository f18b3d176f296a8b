"""CoSENT (Huang et al., TASLP 2024; Su 2022): the ranking loss over pair similarities and its baselines."""

from __future__ import annotations

from sentsweep.methods.cosent.losses import (
    LOSSES,
    ContrastivePairLoss,
    CoSENTPairLoss,
    MSEPairLoss,
    PairLoss,
    PairLossModule,
    SoftmaxClassifierHead,
    SoftmaxPairLoss,
    TripletPairLoss,
    contrastive_loss,
    cosent_loss,
    cross_encoder_cosent_loss,
    get_loss,
    make_pair_loss,
    mse_cosine_loss,
    softmax_classifier_loss,
    triplet_loss,
)

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
