"""CoSENT search spaces (define-by-run Optuna functions).

``cosent``: the scale lambda in [1, 40] (the paper finds it robust in 5..40), pooling, learning rate,
batch size and warmup ratio around the paper's defaults, which are the first point (read from
:class:`~sentsweep.trainables.cosent.CosentConfig`: lambda 20, mean, 2e-5, 16, 0.1). lambda scales the
cosines of the bi-encoder (eq. 10) and the raw scores of the cross-encoder (eq. 11) alike.
``cosent-losses``: also searches the loss among CoSENT and the paper's baselines (eqs. 2, 4, 6, 10),
with each loss's own parameter suggested only on its branch.
"""

from __future__ import annotations

from typing import Any

import optuna

from sentsweep.search_spaces.spec import SearchSpaceSpec, default_point
from sentsweep.trainables.cosent import CosentConfig

POOLINGS = ["mean", "cls", "max", "first_last"]
BATCH_SIZES = [16, 32, 64]
#: The paper's setting of the searched parameters: the config's defaults.
PAPER_DEFAULTS: dict[str, Any] = default_point(CosentConfig, "scale", "pooling", "lr", "batch_size", "warmup_ratio")


def _optimisation(trial: optuna.Trial) -> None:
    trial.suggest_categorical("pooling", POOLINGS)
    trial.suggest_float("lr", 5e-6, 1e-4, log=True)
    trial.suggest_categorical("batch_size", BATCH_SIZES)
    trial.suggest_float("warmup_ratio", 0.0, 0.2)


def cosent_space(trial: optuna.Trial) -> None:
    """lambda, pooling, learning rate, batch size, warmup ratio."""
    trial.suggest_float("scale", 1.0, 40.0)
    _optimisation(trial)


def cosent_loss_space(trial: optuna.Trial) -> None:
    """The loss (CoSENT or a baseline for graded scores) with its own parameter, then the rest."""
    loss = trial.suggest_categorical("loss", ["cosent", "mse", "contrastive", "triplet"])
    if loss == "cosent":
        trial.suggest_float("scale", 1.0, 40.0)
    elif loss == "contrastive":
        trial.suggest_float("epsilon", 0.0, 0.9)
    elif loss == "triplet":
        trial.suggest_float("margin", 0.1, 5.0, log=True)
    _optimisation(trial)


COSENT_SPACE = SearchSpaceSpec(
    "cosent", "cosent", cosent_space, dict(PAPER_DEFAULTS), "CoSENT lambda, pooling, lr, batch size, warmup"
)
COSENT_LOSS_SPACE = SearchSpaceSpec(
    "cosent-losses",
    "cosent",
    cosent_loss_space,
    default_point(CosentConfig, "loss") | PAPER_DEFAULTS,
    "CoSENT against its baselines (MSE, contrastive, triplet)",
)


def cosent_pooling_space(trial: optuna.Trial) -> None:
    """Pooling only (the paper's Table VIII); everything else at the paper's defaults."""
    trial.suggest_categorical("pooling", POOLINGS)


COSENT_POOLING_SPACE = SearchSpaceSpec(
    "cosent-pooling",
    "cosent",
    cosent_pooling_space,
    default_point(CosentConfig, "pooling"),
    "CoSENT pooling ablation (Table VIII): each pooling evaluated once, in order",
    extra_points=tuple({"pooling": p} for p in POOLINGS if p != PAPER_DEFAULTS["pooling"]),
)
