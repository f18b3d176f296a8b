"""The method's trainable and search space of a sweep, and the settings its trials share, checked before Ray starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sentsweep.errors import ConfigError, config_error
from sentsweep.platform.config import SweepConfig

if TYPE_CHECKING:
    from sentsweep.search_spaces import PythonSpace, SearchSpaceSpec
    from sentsweep.trainables.registry import TrainableSpec
    from sentsweep.trainables.trial_config import TrialConfig

    #: A sweep's space: one read from YAML, or one written in Python.
    SearchSpaceLike = SearchSpaceSpec | PythonSpace


def space_points(space: SearchSpaceLike) -> list[dict[str, Any]]:
    """The points a space evaluates first, in order: its paper setting, then its presets."""
    return [space.first_point, *space.extra_points]


def reference_setting(config: SweepConfig, space: SearchSpaceLike) -> dict[str, Any] | None:
    """With ``reference``, the point of the sweep's reference trial: the paper's setting, which no scheduler stops."""
    return space.first_point if config.reference else None


def unstopped_point(config: SweepConfig, space: SearchSpaceLike) -> dict[str, Any] | None:
    """The point whose trials no scheduler stops: the reference's, or the first point while the sweep measures its
    noise on it and its replicas (the noise is then that of final values, as the improvement it is compared with)."""
    measures_noise = config.stop_when == "converged" and config.convergence.noise_sd is None
    return space.first_point if config.reference or measures_noise else None


def resolve_specs(config: SweepConfig, source: str | None = None, trainable: TrainableSpec | None = None,
                  space: SearchSpaceLike | None = None) -> tuple[TrainableSpec, SearchSpaceLike]:
    """The method's trainable and the search space, from the registries unless given; the space is bound to the
    settings the trials share (a first point may depend on ``fixed`` or the model, as CoSENT's NLI setting does)."""
    try:
        if trainable is None:
            from sentsweep.trainables.registry import get_trainable

            trainable = get_trainable(config.method)
        if space is None:
            from sentsweep.search_spaces import space_for

            space = space_for(config.search_space or config.method, config.method, source)
        if space.method != config.method:
            raise ConfigError(f"search space '{space.name}' is for method '{space.method}', "
                              f"not '{config.method}'", field="search_space")
        space = space.for_settings(trial_param_space(config))
    except ConfigError as exc:
        raise ConfigError(exc.message, field=settings_field(config, exc.field), file=exc.file or source) from None
    except ValidationError as exc:  # the method's config refused a setting the trials share
        raise config_error(exc, source, lambda name: settings_field(config, name),
                           getattr(trainable, "config_cls", None)) from None
    return trainable, space


def settings_field(config: SweepConfig, name: str | None) -> str | None:
    """A trial setting's place in the sweep config: ``fixed.NAME`` when ``fixed`` sets it."""
    return f"fixed.{name}" if name in config.fixed else name


def describe_settings(values: Mapping[str, Any], digits: int = 3) -> str:
    """``lr=2e-05, pooling=mean``: trial settings on one line, floats to ``digits`` significant digits."""
    return ", ".join(f"{k}={v:.{digits}g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())


def trial_param_space(config: SweepConfig) -> dict[str, Any]:
    """The settings every trial shares: ``fixed``, the sweep's model, data, metric, seed and system-metrics switch."""
    params = {**config.fixed, "seed": config.fixed.get("seed", config.seed)}
    params.update({k: v for k, v in (("model", config.model), ("data_dir", config.data_dir)) if v is not None})
    params.update(metric=config.metric, mode=config.mode)
    if config.tracking.system_metrics:
        params.update(system_metrics=True, system_metrics_interval_s=config.tracking.system_metrics_interval_s)
    return params


def validate_trials(config: SweepConfig, trainable: TrainableSpec, space: SearchSpaceLike,
                    source: str | None = None) -> list[TrialConfig]:
    """The trial configs of the space's first points; refused: ``fixed`` settings invalid or set by the space."""
    points, fixed_here = space_points(space), space.fixed
    if searched := sorted(set(config.fixed) & set().union(*points, fixed_here)):
        name = searched[0]
        # a space written in the config takes the value as one more entry; a shipped one becomes the base of one
        where = f"add '{name}: VALUE' under search_space" if isinstance(config.search_space, dict) else \
            f"search_space: {{base: {config.space_name}, {name}: VALUE}}"
        raise ConfigError(f"'{name}' is set by space '{space.name}'; remove it from fixed, or fix it in the space: "
                          f"{where}", field=f"fixed.{name}", file=source)
    try:
        return [trainable.config_cls.model_validate({**trial_param_space(config), **fixed_here, **point})
                for point in points]
    except ValidationError as exc:
        raise config_error(exc, source, lambda name: settings_field(config, name), trainable.config_cls) from None
