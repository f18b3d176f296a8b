"""Warm start: a new sweep's study begins with an earlier sweep's COMPLETE and PRUNED trials, placed in the new
space, from its JSON journal. Both must be the same measurement (:func:`refuse_another_measurement`): TPE splits
its history at a quantile, so figures of another dev set would mislead it without error."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from sentsweep.errors import ConfigError, DataError
from sentsweep.platform.config import SweepConfig, resolve_sweep_folder
from sentsweep.platform.location import MANIFEST, locate
from sentsweep.platform.results import WARM_START_ATTR, is_warm_start
from sentsweep.platform.search.study_store import load_study

logger = logging.getLogger(__name__)

#: Sweep settings (the method and the ranking) and trial settings (the dev protocol) that make two sweeps' values
#: one measurement.
SWEEP_MEASUREMENT = ("method", "metric", "mode", "objectives")
TRIAL_MEASUREMENT = ("dev_data", "max_dev_pairs", "eval_max_length")


def load_history(sweep_dir: str, define_by_run: Callable[[optuna.Trial], Any], endpoint_url: str | None = None,
                 config: SweepConfig | None = None, source: str | None = None) -> list[FrozenTrial]:
    """The earlier sweep's finished trials in the new space; refused when ``config`` (of the file ``source``)
    measures otherwise. A warning says why no trial is placed."""
    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    if config is not None:
        refuse_another_measurement(manifest.sweep_config(location.file_uri(MANIFEST)), config, manifest.data_sha256,
                                   source)
    if (study := load_study(location)) is None:
        raise ConfigError("the sweep has no Optuna study yet (no trial was suggested): nothing to start from",
                          field="warm_start", file=location.uri)
    placed = []
    finished = [trial for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
                if not is_warm_start(trial)]  # the earlier sweep's own history belongs to its source
    for trial in finished:
        probe = optuna.create_study(sampler=_EarlierValues(trial.params)).ask()
        define_by_run(probe)  # the distributions the new space asks for at the earlier parameters
        distributions = {name: d for name, d in probe.distributions.items()
                         if name in trial.params and _allows(d, trial.params[name])}
        if distributions:
            placed.append(optuna.trial.create_trial(
                state=trial.state, values=trial.values, params={name: trial.params[name] for name in distributions},
                distributions=distributions, intermediate_values=trial.intermediate_values,
                user_attrs={WARM_START_ATTR: manifest.sweep_name}, constraints=trial.constraints or None))
    if not placed:
        logger.warning("warm start: %s places no trial (%s)", location.uri,
                       f"none of its {len(finished)} finished trials has a value this space searches" if finished
                       else "it has no finished trial")
    return placed


def measured_data(config: SweepConfig) -> dict[str, str]:
    """SHA-256 of the files each ranking metric reads, kept in the manifest; empty when the data do not resolve."""
    from sentsweep.evaluation.metric_protocols import metric_data_sha256

    metrics = dict.fromkeys([config.metric, *(o.metric for o in config.objective_list)])
    try:
        found = {metric: metric_data_sha256(metric, config.data_dir) for metric in metrics}
    except (DataError, OSError):
        return {}
    return {metric: digest for metric, digest in found.items() if digest is not None}


def refuse_another_measurement(earlier: SweepConfig, config: SweepConfig,
                               earlier_data: Mapping[str, str] | None = None, source: str | None = None) -> None:
    """A :class:`ConfigError` naming each setting the earlier sweep measured otherwise."""
    differences = [f"{field} {getattr(earlier, field)!r} vs {getattr(config, field)!r}" for field in SWEEP_MEASUREMENT
                   if getattr(earlier, field) != getattr(config, field)]
    differences += [f"fixed.{field} {_trial_setting(earlier, field)!r} vs {_trial_setting(config, field)!r}"
                    for field in TRIAL_MEASUREMENT if _trial_setting(earlier, field) != _trial_setting(config, field)]
    if earlier_data:
        now = measured_data(config)
        differences += [f"the files {metric} reads (sha256 {digest[:12]} vs {now[metric][:12]}: another data "
                        "directory, e.g. the bundled sample against the full data)"
                        for metric, digest in earlier_data.items() if metric in now and now[metric] != digest]
    if differences:
        raise ConfigError("the earlier sweep's values are another measurement than this sweep's (earlier vs this: "
                          + "; ".join(differences) + "): TPE would rank them together; warm-start from a sweep "
                          "measured the same way", field="warm_start", file=source)


def _trial_setting(config: SweepConfig, field: str) -> Any:
    from sentsweep.trainables.trial_config import TrialConfig

    default = TrialConfig.model_fields[field].default if field in TrialConfig.model_fields else None
    return config.fixed.get(field, default)


class _EarlierValues(optuna.samplers.RandomSampler):
    """Samples an earlier trial's value where the new space allows it, else the distribution's first value."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        super().__init__()
        self.params = params

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        if _allows(param_distribution, self.params.get(param_name)):
            return self.params[param_name]
        if isinstance(param_distribution, optuna.distributions.CategoricalDistribution):
            return param_distribution.choices[0]
        return param_distribution.low  # type: ignore[attr-defined]


def _allows(distribution: BaseDistribution, value: Any) -> bool:
    if value is None:
        return False
    try:
        optuna.trial.create_trial(params={"p": value}, distributions={"p": distribution}, value=0.0)
    except (ValueError, TypeError):  # outside the range, or a choice the new space does not offer
        return False
    return True


def unseen_points(points: Sequence[Mapping[str, Any]], history: Sequence[FrozenTrial]) -> list[dict[str, Any]]:
    return [dict(p) for p in points if not any(all(t.params.get(k) == v for k, v in p.items()) for t in history)]
