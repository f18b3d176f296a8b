"""sentsweep: hyperparameter search for sentence-embedding training.

Three methods (SNCSE, CoSENT, multi-view structured contrastive learning) wrapped as Ray Tune
trainables, searched with Optuna, tracked in MLflow. The science lives in ``sentsweep.methods``,
``sentsweep.data`` and ``sentsweep.evaluation`` and never imports Ray or MLflow.
"""

from __future__ import annotations

__version__ = "0.1.0"
