"""Safe resume: a sweep continues with the config it was started with, or a refusal naming what differs.

A sweep folder's manifest stores the validated config the sweep started with. A resume compares the config
it is given (``sweep CONFIG --resume-interrupted``: the YAML and its ``--set`` overrides; ``resume DIR
--set ...``: the stored config with the overrides) field by field and refuses any difference, on one line
naming each field with its stored and given values. ``--allow-change FIELD,...`` lets through the fields a
restored Ray Tune experiment can take (:data:`CHANGEABLE`); the others are refused with the reason
(:data:`FIXED_ON_RESUME`), whether or not they are named.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.sweep_tracking import flatten

#: Fields a resume may change when ``--allow-change`` names them: the time budget is given to ``tune.run``
#: afresh on every ``fit`` (a TuneConfig field of the restored Tuner).
CHANGEABLE: frozenset[str] = frozenset({"time_budget_s"})
#: Fields users expect to change but Ray Tune 2.60 keeps from the saved experiment, with the reason.
FIXED_ON_RESUME: dict[str, str] = {
    "num_samples": "Ray Tune restores the number of samples from the searcher's saved state "
                   "(SearchGenerator.total_samples), so a resume cannot change it",
    "max_concurrent_trials": "Ray Tune restores the concurrency limiter from the searcher's saved state",
}


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
    unknown = [name for name in allow if name not in CHANGEABLE]
    if unknown:
        reasons = "; ".join(f"{name}: {FIXED_ON_RESUME.get(name, 'only ' + ', '.join(sorted(CHANGEABLE)) + ' can')}"
                            for name in unknown)
        raise ConfigError(f"cannot change on resume: {reasons}", field="--allow-change", file=source)
    if given is None:
        return stored
    changes = config_changes(stored.model_dump(mode="json"), given.model_dump(mode="json"))
    refused = {key: change for key, change in changes.items() if key not in allow}
    if refused:
        fixed = [key for key in refused if key in FIXED_ON_RESUME]
        hint = (f"; {fixed[0]}: {FIXED_ON_RESUME[fixed[0]]}" if fixed else
                f"; only {', '.join(sorted(CHANGEABLE))} can change, with --allow-change" if
                set(refused) <= CHANGEABLE else "")
        raise ConfigError(f"the config differs from the one the sweep was started with: {_describe(refused)}; "
                          f"run it unchanged, or start a new sweep{hint}", file=source)
    return stored.model_copy(update={key: getattr(given, key) for key in changes})
