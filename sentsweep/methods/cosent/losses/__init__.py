"""CoSENT and the baselines it is compared with, as pure PyTorch losses: one module per loss.

Paper: X. Huang, H. Peng, D. Zou, Z. Liu, J. Li, K. Liu, J. Wu, J. Su, P. S. Yu, "CoSENT: Consistent
Sentence Embedding via Similarity Ranking" (IEEE TASLP 2024; the loss is Su's 2022 CoSENT,
https://kexue.fm/archives/8847). Equation numbers are the paper's.

========================  ============  ============================  ===================================
module                    equation      functional loss               module (``name`` in :data:`LOSSES`)
========================  ============  ============================  ===================================
``cosent``                eq. 10        ``cosent_loss``               ``CoSENTPairLoss`` (cosent)
``cross_encoder``         eq. 11        ``cross_encoder_cosent_loss`` ``CrossEncoderCoSENTLoss`` (cosent-cross)
``mse``                   eq. 4         ``mse_cosine_loss``           ``MSEPairLoss`` (mse)
``softmax``               eq. 5         ``softmax_classifier_loss``   ``SoftmaxPairLoss`` (softmax)
``contrastive``           eq. 2         ``contrastive_loss``          ``ContrastivePairLoss`` (contrastive)
``triplet``               eq. 6         ``triplet_loss``              ``TripletPairLoss`` (triplet)
========================  ============  ============================  ===================================

The functional losses take tensors and return a scalar tensor; the modules (as sentence-transformers'
losses: a ``citation`` and ``get_config_dict()`` each) are built by name with :func:`create_loss`.
Hyperparameters are required arguments everywhere: their defaults live in the trainable's config.
Every loss computes in at least float32 (:mod:`~sentsweep.methods.cosent.losses.inputs`).
"""

from __future__ import annotations

from sentsweep.methods.cosent.losses.base import Loss, PairLoss, PairLossModule
from sentsweep.methods.cosent.losses.contrastive import ContrastivePairLoss, contrastive_loss
from sentsweep.methods.cosent.losses.cosent import CoSENTPairLoss, cosent_loss
from sentsweep.methods.cosent.losses.cross_encoder import CrossEncoderCoSENTLoss, cross_encoder_cosent_loss
from sentsweep.methods.cosent.losses.mse import MSEPairLoss, mse_cosine_loss
from sentsweep.methods.cosent.losses.registry import (
    LOSSES,
    create_loss,
    get_loss,
    label_midpoint,
    loss_parameters,
)
from sentsweep.methods.cosent.losses.softmax import SoftmaxClassifierHead, SoftmaxPairLoss, softmax_classifier_loss
from sentsweep.methods.cosent.losses.triplet import Distance, Mining, TripletPairLoss, triplet_loss

__all__ = [
    "LOSSES",
    "CoSENTPairLoss",
    "ContrastivePairLoss",
    "CrossEncoderCoSENTLoss",
    "Distance",
    "Loss",
    "MSEPairLoss",
    "Mining",
    "PairLoss",
    "PairLossModule",
    "SoftmaxClassifierHead",
    "SoftmaxPairLoss",
    "TripletPairLoss",
    "contrastive_loss",
    "cosent_loss",
    "create_loss",
    "cross_encoder_cosent_loss",
    "get_loss",
    "label_midpoint",
    "loss_parameters",
    "mse_cosine_loss",
    "softmax_classifier_loss",
    "triplet_loss",
]
