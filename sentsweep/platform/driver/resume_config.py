"""Safe resume: a sweep continues with the config it was started with, or a refusal naming what differs.

A sweep folder's manifest stores the validated config the sweep started with. A resume compares the config
it is given (``sweep CONFIG --resume-interrupted``: the YAML and its ``--set`` overrides; ``resume DIR
--set ...``: the stored config with the overrides) field by field and refuses any difference, on one line
naming each field with its stored and given values. ``--allow-change FIELD,...`` lets through the fields a
restored Ray Tune experiment can take (:data:`CHANGEABLE`); the others are refused with the reason
(:data:`FIXED_ON_RESUME`), whether or not they are named. Once the restore succeeded, an allowed change is
written to the manifest (:func:`record_resume_config`): it is the sweep's config from then on, which the next
resume compares with.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sentsweep._compat.ray import restored_tune_config
from sentsweep.errors import ConfigError
from sentsweep.platform.config import BudgetConfig, SweepConfig
from sentsweep.platform.tracking.parent_run import flatten

if TYPE_CHECKING:
    from ray.tune import Tuner

    from sentsweep.platform.location import SweepLocation, SweepManifest
    from sentsweep.platform.tracking.parent_run import SweepRun

#: The parent run's tag naming the changes the latest resume made to the config (JSON ``{field: [old, new]}``;
#: the parent's params keep the values the sweep started with).
RESUME_CHANGES_TAG = "sentsweep.resume_changes"

#: Fields a resume may change when ``--allow-change`` names them (a section, ``budget``, stands for its fields,
#: which may also be named alone: ``budget.gpu_hours``): the time budget is given to ``tune.run`` afresh on every
#: ``fit`` (a TuneConfig field of the restored Tuner); the number of samples replaces the one restored with the
#: searcher's state (:mod:`~sentsweep.platform.driver.resume_samples`; not below the trials already started); the
#: compute budget, the stop grace and the notifications are the driver's own, read from the config the sweep
#: resumes with (:class:`~sentsweep.platform.driver.budget.SweepBudget` continues the count against the new
#: limits, and a search the old ones ended starts trials again).
CHANGEABLE: frozenset[str] = frozenset({"time_budget_s", "num_samples", "budget", "stop_grace_s", "notify"})
#: Fields users expect to change but Ray Tune 2.60 keeps from the saved experiment, with the reason.
FIXED_ON_RESUME: dict[str, str] = {
    "max_concurrent_trials": "Ray Tune restores the concurrency limiter from the searcher's saved state",
}


def is_changeable(name: str, allowed: Collection[str] = CHANGEABLE) -> bool:
    """Whether the dotted field ``name`` is one of ``allowed`` or lies in an ``allowed`` section."""
    return name in allowed or name.split(".", 1)[0] in allowed


def config_changes(stored: dict[str, Any], given: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{field: (stored value, given value)}`` for every dotted field that differs."""
    old, new = flatten(stored), flatten(given)
    return {key: (old.get(key), new.get(key)) for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)}


def _describe(changes: dict[str, tuple[Any, Any]]) -> str:
    return ", ".join(f"{key} ({old!r} -> {new!r})" for key, (old, new) in changes.items())


def resume_config(stored: SweepConfig, given: SweepConfig | None, allow: Collection[str] = (),
                  source: str | None = None) -> SweepConfig:
    """The config to resume with: ``stored``, with the ``allow``-ed :data:`CHANGEABLE` fields of ``given``.

    Raises :class:`ConfigError` (one line, naming every differing field) when ``given`` differs elsewhere,
    or when ``allow`` names a field a resume cannot change.
    """
    unknown = [name for name in allow if not is_changeable(name)]
    if unknown:
        reasons = "; ".join(f"{name}: {FIXED_ON_RESUME.get(name, 'only ' + ', '.join(sorted(CHANGEABLE)) + ' can')}"
                            for name in unknown)
        raise ConfigError(f"cannot change on resume: {reasons}", field="--allow-change", file=source)
    if given is None:
        return stored
    changes = config_changes(stored.model_dump(mode="json"), given.model_dump(mode="json"))
    refused = {key: change for key, change in changes.items() if not is_changeable(key, allow)}
    if refused:
        fixed = [key for key in refused if key in FIXED_ON_RESUME]
        allowable = [key for key in refused if is_changeable(key)]
        hint = (f"; {fixed[0]}: {FIXED_ON_RESUME[fixed[0]]}" if fixed else
                f"; {', '.join(allowable)} can change with --allow-change {','.join(allowable)}" if allowable else "")
        raise ConfigError(f"the config differs from the one the sweep was started with: {_describe(refused)}; "
                          f"run it unchanged, or start a new sweep{hint}", file=source)
    fields = {key.split(".", 1)[0] for key in changes}  # every differing field of a section is allowed
    return stored.model_copy(update={name: getattr(given, name) for name in fields})


def record_resume_config(location: SweepLocation, manifest: SweepManifest, config: SweepConfig) -> dict[str, Any]:
    """Write ``config`` (an allowed change of the stored one) to the sweep folder's manifest and ``sweep.yaml``;
    the changes, ``{field: [stored, new]}`` (empty, and nothing written, when there are none)."""
    changes = config_changes(manifest.config, config.model_dump(mode="json"))
    if changes:
        location.write_manifest(manifest.model_copy(update={"config": config.model_dump(mode="json")}), config)
    return {key: list(change) for key, change in changes.items()}


def apply_resume_config(tuner: Tuner, location: SweepLocation, manifest: SweepManifest, config: SweepConfig,
                        sweep: SweepRun) -> None:
    """After ``Tuner.restore``: give ``tuner`` the time budget and the number of samples of ``config`` (and a search
    again when the budget changed: the stopper of a budget still spent ends it at once), record an allowed change in
    the manifest and on the parent run (:data:`RESUME_CHANGES_TAG`)."""
    import json

    from sentsweep.platform.driver.resume_samples import resize_search

    set_time_budget(tuner, config.time_budget_s)
    changed_budget = BudgetConfig.model_validate(manifest.config.get("budget") or {}) != config.budget
    resize_search(tuner, config.num_samples, reopen=changed_budget, storage=location.resolve())
    changes = record_resume_config(location, manifest, config)
    if changes:
        sweep.set_tags({RESUME_CHANGES_TAG: json.dumps(changes)})


def set_time_budget(tuner: Tuner, seconds: float | None) -> None:
    """Give a restored Tuner a new time budget: Ray has no public setter, but reads the restored TuneConfig's
    ``time_budget_s`` afresh on every ``fit`` (``TunerInternal._get_tune_run_arguments``)."""
    tune_config = restored_tune_config(tuner)
    if tune_config is None or not hasattr(tune_config, "time_budget_s"):
        raise ConfigError("this Ray Tune version does not let a resume change the time budget",
                          field="time_budget_s")
    tune_config.time_budget_s = seconds
