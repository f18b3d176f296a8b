"""Which suggestions TPE's multivariate model made (not its random start-up, nor a queued point), seen through the
sampler's public ``sample_relative``: it returns the model's parameters, and nothing before the model starts."""

from __future__ import annotations

from typing import Any

import optuna


def model_made(sampler: optuna.samplers.BaseSampler) -> set[int]:
    """The numbers of the trials whose parameters ``sampler``'s model makes from now on (filled as they are asked)."""
    made: set[int] = set()
    sample = sampler.sample_relative

    def spy(study: optuna.Study, trial: optuna.trial.FrozenTrial, space: dict[str, Any]) -> dict[str, Any]:
        params = sample(study, trial, space)
        if params:
            made.add(trial.number)
        return params

    sampler.sample_relative = spy  # type: ignore[method-assign]
    return made
