"""Whether a sweep's search is over (``search.json``): a resume after ``fit`` returned reads the results back
instead of training the errored trials again, unless a bound of the search changed."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.location import SweepLocation

if TYPE_CHECKING:
    from ray.tune import ResultGrid, Tuner

SEARCH_FILE = "search.json"


def search_bounds(config: SweepConfig) -> dict[str, Any]:
    return {"num_samples": config.num_samples, "time_budget_s": config.time_budget_s,
            "budget": config.budget.model_dump(mode="json")}


def mark_search_over(location: SweepLocation, config: SweepConfig) -> None:
    mark = {"status": "over", "ended": time.time(), "bounds": search_bounds(config)}
    location.write_text(SEARCH_FILE, json.dumps(mark, indent=1))


def read_mark(location: SweepLocation) -> dict[str, Any] | None:
    return location.read_json_object(SEARCH_FILE, "whether the search is over")


def search_results(tuner: Tuner, location: SweepLocation, config: SweepConfig, *, fresh: bool = False,
                   stage_began: bool = False) -> ResultGrid:
    """The search's results: read back when the search is over or the stage began, else fitted."""
    if not fresh and (stage_began or (read_mark(location) or {}).get("bounds") == search_bounds(config)):
        return tuner.get_results()
    return tuner.fit()
