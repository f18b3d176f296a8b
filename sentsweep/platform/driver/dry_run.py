"""``sentsweep sweep CONFIG --check``: every check a sweep makes before Ray starts, and what the sweep would run.

:func:`check_only` resolves the config, reads and checks its space against the method's config (:mod:`.specs`),
validates the first points' trial configs, runs the pre-start checks (:mod:`.preflight`: data, model, storage,
tracking) and reads a warm start's earlier sweep, without starting Ray, taking a lock or writing anything: the
storage probe removes what it made, and the tracking check writes no store. A failure raises the same one-line
error a sweep would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.preflight import check_sweep
from sentsweep.platform.driver.specs import SearchSpaceLike, resolve_specs, space_points, validate_trials


def check_only(config: SweepConfig, source: str | None = None, echo: Callable[[str], None] = print) -> None:
    """Run a sweep's pre-start checks on ``config`` and print what it would run (see the module docstring)."""
    from sentsweep.credentials import mask_uri

    resolved = config.resolved()
    trainable, space = resolve_specs(resolved, source)
    trials = validate_trials(resolved, trainable, space, source)
    check_sweep(resolved, trials, source)
    history = []
    if resolved.warm_start:
        from sentsweep.platform.search.warm_start import load_history

        history = load_history(resolved.warm_start, space.define_by_run, resolved.storage_endpoint_url, resolved)
    for line in summary(resolved, space, source):
        echo(line)
    if resolved.warm_start:
        echo(f"warm start: {len(history)} trials of {mask_uri(resolved.warm_start)}")
    echo("checks passed: config, search space, data, model, storage, tracking (Ray was not started)")


def summary(config: SweepConfig, space: SearchSpaceLike, source: str | None = None) -> list[str]:
    """What a sweep of ``config`` over ``space`` runs: the space, the first points, the trials, the resources per
    trial and where its folder and runs go."""
    from sentsweep.credentials import mask_uri
    from sentsweep.platform.search.samplers import OPTUNA_STARTUP_TRIALS

    points = space_points(space)
    describe = getattr(space, "describe", None)
    lines = [f"sweep {config.name}{f' ({source})' if source else ''}: method {config.method}, "
             f"search space '{space.name}'"]
    lines += ["search space:", *(f"  {line}" for line in (describe() if describe else [str(space.define_by_run)]))]
    shared = {**config.fixed, **getattr(space, "fixed", {})}
    if shared:
        lines.append(f"fixed in every trial: {_settings(shared)}")
    lines.append(f"first point: {_settings(points[0]) or '(all sampled)'}")
    lines += [f"then: {_settings(p)}" for p in points[1:]]
    if len(points) > config.num_samples:
        lines.append(f"note: {len(points)} points are evaluated first, and num_samples is {config.num_samples}: "
                     f"the last {len(points) - config.num_samples} will not run")
    startup = config.startup_trials if config.startup_trials is not None else OPTUNA_STARTUP_TRIALS
    s = config.scheduler
    stopping = (f"ASHA (grace {s.grace_period}, reduction {s.reduction_factor:g})" if s.type == "asha"
                else "no early stopping")
    lines.append(f"trials: {config.num_samples}, {config.max_concurrent_trials or 'as many as fit'} at a time; "
                 f"TPE after {startup} random; {stopping}; metric {config.metric} ({config.mode})")
    lines.append(f"resources per trial: {config.resources.cpu:g} CPU, {config.resources.gpu:g} GPU")
    lines.append(f"sweep folder: under {mask_uri(config.storage_path)} (made when the sweep starts)")
    lines.append(f"tracking: {mask_uri(config.tracking.uri)}, experiment '{config.tracking.experiment}'"
                 + (f", artifacts {mask_uri(config.tracking.artifact_location)}"
                    if config.tracking.artifact_location else ""))
    return lines


def _settings(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_short(v)}" for k, v in values.items())


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
