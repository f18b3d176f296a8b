"""Whether a sweep's search is over: ``search.json`` in the sweep folder, so that a resume does not fit it again.

Tune's ``fit`` returning (not stopped by a signal) ends the search; what follows (the confirmation stage, finalize:
evaluation, export, registration) may still crash. A resume of such a sweep must read the search's results back
(``Tuner.get_results``) rather than fit the restored Tuner again, which would train the errored trials once more
and could change the winner after it was registered. :func:`mark_search_over` records the end, with the settings
that bound the search (``num_samples``, ``time_budget_s``, ``budget``); :func:`search_results` reads the results
back when the mark holds the sweep's current bounds, or when the confirmation stage began (its own
``confirmation.json``). A resume that changes a bound (``--allow-change num_samples`` or ``budget``: more trials,
a lifted stop) asks for more search, and fits again.

The mark is read as the sweep folder's other state (:meth:`SweepLocation.read_optional
<sentsweep.platform.location.SweepLocation.read_optional>`): absent only when the file is missing; a storage that
does not answer stops the resume (:class:`~sentsweep.errors.StorageError`) instead of fitting again.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import SweepLocation

if TYPE_CHECKING:
    from ray.tune import ResultGrid, Tuner

#: The mark's file in the sweep folder.
SEARCH_FILE = "search.json"


def search_bounds(config: SweepConfig) -> dict[str, Any]:
    """The settings of ``config`` that decide when the search ends."""
    return {"num_samples": config.num_samples, "time_budget_s": config.time_budget_s,
            "budget": config.budget.model_dump(mode="json")}


def mark_search_over(location: SweepLocation, config: SweepConfig) -> None:
    """Record in the sweep folder that the search ended under ``config``'s bounds."""
    mark = {"status": "over", "ended": time.time(), "bounds": search_bounds(config)}
    location.write_text(SEARCH_FILE, json.dumps(mark, indent=1))


def read_mark(location: SweepLocation) -> dict[str, Any] | None:
    """The sweep folder's mark (None when the search has not ended); an unreadable one is a :class:`ConfigError`."""
    return location.read_json_object(SEARCH_FILE, "whether the search is over")


def search_over(location: SweepLocation, config: SweepConfig) -> bool:
    """Whether the search ended under the bounds ``config`` has now."""
    mark = read_mark(location)
    return mark is not None and mark.get("bounds") == search_bounds(config)


def search_results(tuner: Tuner, location: SweepLocation, config: SweepConfig, *, fresh: bool = False,
                   stage_began: bool = False) -> ResultGrid:
    """The search's results: read back without fitting when the search is over (:func:`search_over`) or the
    confirmation stage began (``stage_began``); otherwise the Tuner fitted. A ``fresh`` sweep (a new folder, not a
    resume) always fits: a state file found in its folder was planted there, never written by it."""
    if not fresh and (stage_began or search_over(location, config)):
        return tuner.get_results()
    return tuner.fit()
