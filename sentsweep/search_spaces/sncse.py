"""SNCSE search spaces (define-by-run Optuna functions).

``sncse``: the loss variant (Table 3: ``bml``, ``infonce``, ``pl``, ``nl``); on the ``bml`` branch the
margins and weight of BML: alpha in [0, 0.3], then beta log-uniform in (alpha, 2.0] (sampled after alpha
with alpha + :data:`MIN_GAP` as its lower bound, so alpha < beta always holds; 2.0 means no upper bound;
log-uniform so that most trials land where the paper's Figure 3 varies, beta 0.2-0.6, and few in the
flat "no bound" tail, which uniform sampling would give 80% of the trials) and
lambda log-uniform in [1e-5, 1e-1]; then the InfoNCE temperature, the learning rate and the batch size.
The first point is the paper's base setting, read from
:class:`~sentsweep.trainables.sncse.SncseConfig`'s defaults (alpha 0.1, beta 0.3, tau 0.05, lr 1e-5,
batch 256), with the lambda of :func:`~sentsweep.methods.sncse.default_lambda` for the family of the sweep's
model and the lr and batch size of its size, read from its config when the sweep starts (:func:`for_sncse_sweep`:
lambda 1e-3 for BERT, 5e-4 for RoBERTa; lr 5e-6 and batch 128 for large models); registered, before a sweep's
model is known, it holds BERT-base's.

``sncse-demo``: the same with CPU-sized batches (16, 32) for the demo sweep.

``sncse-ablation``: the loss variant only (the paper's Table 3), every other setting fixed at the
paper's values; the four variants are the first point and the extra points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import optuna

from sentsweep.methods.encoders import model_type
from sentsweep.methods.sncse import SIZE_SETTINGS, default_lambda, size_setting
from sentsweep.search_spaces.spec import SearchSpaceSpec, default_point
from sentsweep.trainables.sncse import SncseConfig

LOSSES = ["bml", "infonce", "pl", "nl"]
ALPHA_RANGE = (0.0, 0.3)
BETA_MAX = 2.0
#: The smallest beta - alpha a trial can get (beta's interval is open at alpha).
MIN_GAP = 0.01
LAMBDA_RANGE = (1e-5, 1e-1)
TEMPERATURE_RANGE = (0.02, 0.1)
LR_RANGE = (3e-6, 5e-5)
BATCH_SIZES = [64, 128, 256]
DEMO_BATCH_SIZES = [16, 32]
#: The paper's BERT-base setting of the searched parameters: the config's defaults, lambda for BERT (a sweep's
#: first point takes its model's family's lambda: :func:`for_sncse_sweep`).
PAPER_DEFAULTS: dict[str, Any] = default_point(SncseConfig, "loss", "alpha", "beta", "lambda", "temperature", "lr",
                                               "batch_size") | {"lambda": default_lambda("bert")}


def for_sncse_sweep(spec: SearchSpaceSpec, settings: Mapping[str, Any]) -> SearchSpaceSpec:
    """``spec`` as a sweep with ``settings`` runs it, the paper's setting for the sweep's ``model`` (from its config;
    the config's default model when unset), as an unset trial config gets it: a first point searching lambda takes
    ``default_lambda`` of the model's family (:class:`~sentsweep.trainables.sncse.SncseTask`), and one holding the
    base models' lr or batch size takes those of the model's size (``size_setting``: 5e-6 and 128 for large
    models); a space's own first value (the demo's batch 32) is kept."""
    point = dict(spec.first_point)
    model = str(settings.get("model", SncseConfig.model_fields["model"].default))
    if "lambda" in point:
        family = model_type(model, "to choose the first point's lambda (SNCSE: 1e-3 BERT, 5e-4 RoBERTa)")
        point["lambda"] = default_lambda(family)
    by_size = [name for name, value in SIZE_SETTINGS["base"].items() if point.get(name) == value]
    if by_size:
        setting = size_setting(model)
        point.update({name: setting[name] for name in by_size})
    return spec if point == spec.first_point else replace(spec, first_point=point)


def suggest_margins(trial: optuna.Trial) -> tuple[float, float]:
    """alpha in [0, 0.3], then beta log-uniform in [alpha + MIN_GAP, 2.0]: alpha < beta by construction."""
    alpha = trial.suggest_float("alpha", *ALPHA_RANGE)
    beta = trial.suggest_float("beta", alpha + MIN_GAP, BETA_MAX, log=True)
    return alpha, beta


def _suggest(trial: optuna.Trial, batch_sizes: Sequence[int]) -> None:
    loss = trial.suggest_categorical("loss", LOSSES)
    if loss == "bml":
        suggest_margins(trial)
        trial.suggest_float("lambda", *LAMBDA_RANGE, log=True)
    trial.suggest_float("temperature", *TEMPERATURE_RANGE, log=True)
    trial.suggest_float("lr", *LR_RANGE, log=True)
    trial.suggest_categorical("batch_size", list(batch_sizes))


# Module-level functions (not closures): Tune pickles the searcher, define-by-run function included.
def sncse_space(trial: optuna.Trial) -> None:
    """Loss variant; BML's alpha, beta, lambda on its branch; temperature, lr, batch size (64-256)."""
    _suggest(trial, BATCH_SIZES)


def sncse_demo_space(trial: optuna.Trial) -> None:
    """As :func:`sncse_space`, with CPU-sized batches (16, 32)."""
    _suggest(trial, DEMO_BATCH_SIZES)


def sncse_ablation_space(trial: optuna.Trial) -> None:
    """The loss variant only (Table 3); everything else stays at the trial config's defaults."""
    trial.suggest_categorical("loss", LOSSES)


SNCSE_SPACE = SearchSpaceSpec(
    "sncse",
    "sncse",
    sncse_space,
    dict(PAPER_DEFAULTS),
    "SNCSE loss variant, BML alpha < beta and lambda, temperature, lr, batch size",
    for_sweep=for_sncse_sweep,
)
SNCSE_DEMO_SPACE = SearchSpaceSpec(
    "sncse-demo",
    "sncse",
    sncse_demo_space,
    {**PAPER_DEFAULTS, "batch_size": 32},
    "SNCSE space with CPU-sized batches (16, 32) for the demo",
    for_sweep=for_sncse_sweep,
)
SNCSE_ABLATION_SPACE = SearchSpaceSpec(
    "sncse-ablation",
    "sncse",
    sncse_ablation_space,
    default_point(SncseConfig, "loss"),
    "SNCSE's Table 3: BML against InfoNCE, PL and NL, other settings fixed",
    extra_points=tuple({"loss": loss} for loss in LOSSES if loss != PAPER_DEFAULTS["loss"]),
)

__all__ = [
    "PAPER_DEFAULTS",
    "SNCSE_ABLATION_SPACE",
    "SNCSE_DEMO_SPACE",
    "SNCSE_SPACE",
    "for_sncse_sweep",
    "sncse_ablation_space",
    "sncse_demo_space",
    "sncse_space",
    "suggest_margins",
]
