"""CoSENT search spaces (define-by-run Optuna functions).

``cosent``: the scale lambda in [1, 40] (the paper finds it robust in 5..40), pooling, learning rate,
batch size and warmup ratio around the paper's defaults, which are the first point (read from
:class:`~sentsweep.trainables.cosent.CosentConfig`: lambda 20, mean, 2e-5, 16, 0.1). lambda scales the
cosines of the bi-encoder (eq. 10) and the raw scores of the cross-encoder (eq. 11) alike.
``cosent-losses``: also searches the loss among CoSENT and the paper's baselines (eqs. 2, 4, 6, 10),
with each loss's own parameter suggested only on its branch.
``cosent-pooling``: the pooling ablation (Table VIII).

A sweep runs each space for its shared settings (:func:`for_cosent_sweep`): the first point is
``CosentConfig(model=..., train_data=..., architecture=...)`` of the sweep on the searched keys, so with
``train_data: snli`` it is the paper's NLI setting (section 4.1: batch 64, first_last pooling for BERT, cls for
RoBERTa); with ``architecture: cross`` pooling is not searched (eq. 11 scores the [CLS] state), and the spaces
that search the pooling or the loss are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import optuna

from sentsweep.errors import ConfigError
from sentsweep.methods.cosent import loss_parameters
from sentsweep.methods.cosent.losses.registry import LOSSES
from sentsweep.search_spaces.spec import SearchSpaceSpec, config_point, default_point
from sentsweep.trainables.cosent import LOSS_SETTINGS, CosentConfig

POOLINGS = ["mean", "cls", "max", "first_last"]
BATCH_SIZES = [16, 32, 64]
#: The paper's setting of the searched parameters: the config's defaults.
PAPER_DEFAULTS: dict[str, Any] = default_point(CosentConfig, "scale", "pooling", "lr", "batch_size", "warmup_ratio")
#: The shared sweep settings that change the paper's setting of the searched parameters (or what is searched).
SETTING_KEYS = ("model", "train_data", "architecture")


def _training(trial: optuna.Trial) -> None:
    trial.suggest_float("lr", 5e-6, 1e-4, log=True)
    trial.suggest_categorical("batch_size", BATCH_SIZES)
    trial.suggest_float("warmup_ratio", 0.0, 0.2)


def _optimisation(trial: optuna.Trial) -> None:
    trial.suggest_categorical("pooling", POOLINGS)
    _training(trial)


def cosent_space(trial: optuna.Trial) -> None:
    """lambda, pooling, learning rate, batch size, warmup ratio."""
    trial.suggest_float("scale", 1.0, 40.0)
    _optimisation(trial)


def cosent_cross_space(trial: optuna.Trial) -> None:
    """The ``cosent`` space of a cross-encoder sweep: lambda (eq. 11), learning rate, batch size, warmup
    ratio; no pooling (the cross-encoder scores the [CLS] state)."""
    trial.suggest_float("scale", 1.0, 40.0)
    _training(trial)


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


def cosent_pooling_space(trial: optuna.Trial) -> None:
    """Pooling only (the paper's Table VIII); everything else at the paper's defaults."""
    trial.suggest_categorical("pooling", POOLINGS)


def sweep_defaults(settings: Mapping[str, Any]) -> CosentConfig:
    """The config of a sweep's shared settings (:data:`SETTING_KEYS`), whose values are the paper's setting
    for that sweep (the NLI defaults by model family: ``CosentConfig._consistent``)."""
    return CosentConfig(**{key: settings[key] for key in SETTING_KEYS if key in settings})


def _pooling_points(config: CosentConfig) -> tuple[dict[str, Any], ...]:
    """The pooling ablation's presets: every pooling other than the sweep's first."""
    return tuple({"pooling": p} for p in POOLINGS if p != config.pooling)


#: What a space searches that the cross-encoder does not take (eq. 11), by space name.
CROSS_REFUSED = {"cosent-losses": "the loss (eq. 11 is CoSENT's only)",
                 "cosent-pooling": "pooling (eq. 11 scores the [CLS] state)"}


def for_cosent_sweep(spec: SearchSpaceSpec, settings: Mapping[str, Any]) -> SearchSpaceSpec:
    """``spec`` as a sweep with ``settings`` runs it: first point (and the pooling presets) from
    :func:`sweep_defaults`; the cross-encoder's ``cosent`` space without pooling; the spaces searching what the
    cross-encoder does not take refused (one ConfigError naming ``search_space``)."""
    config = sweep_defaults(settings)
    loss = str(settings.get("loss", config.loss))
    if "loss" not in spec.first_point and loss in LOSSES:  # an unknown loss is the trial config's to refuse
        dead = [n for n in spec.first_point if n in LOSS_SETTINGS and n not in loss_parameters(loss)]
        if dead:
            raise ConfigError(f"space '{spec.name}' searches {', '.join(dead)}, which loss '{loss}' (fixed) does not "
                              "take; use search_space 'cosent-losses', or loss 'cosent'", field="search_space")
    if config.architecture == "cross":
        if spec.name in CROSS_REFUSED:
            raise ConfigError(f"space '{spec.name}' searches {CROSS_REFUSED[spec.name]}, which architecture "
                              "'cross' does not take; use search_space 'cosent'", field="search_space")
        names = [name for name in spec.first_point if name != "pooling"]
        return replace(spec, define_by_run=cosent_cross_space, first_point=config_point(config, *names))
    extra = _pooling_points(config) if spec.name == "cosent-pooling" else spec.extra_points
    return replace(spec, first_point=config_point(config, *spec.first_point), extra_points=extra)


COSENT_SPACE = SearchSpaceSpec(
    "cosent", "cosent", cosent_space, dict(PAPER_DEFAULTS), "CoSENT lambda, pooling, lr, batch size, warmup",
    for_sweep=for_cosent_sweep,
)
COSENT_LOSS_SPACE = SearchSpaceSpec(
    "cosent-losses",
    "cosent",
    cosent_loss_space,
    default_point(CosentConfig, "loss") | PAPER_DEFAULTS,
    "CoSENT against its baselines (MSE, contrastive, triplet)",
    for_sweep=for_cosent_sweep,
)
COSENT_POOLING_SPACE = SearchSpaceSpec(
    "cosent-pooling",
    "cosent",
    cosent_pooling_space,
    default_point(CosentConfig, "pooling"),
    "CoSENT pooling ablation (Table VIII): each pooling evaluated once, in order",
    extra_points=_pooling_points(CosentConfig()),
    for_sweep=for_cosent_sweep,
)
