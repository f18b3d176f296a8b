"""The confirmation stage's folder and state file: where its Tune experiment lives, and what a resume reads back
(the candidates, their trial configs and further seeds, whether the stage is done)."""

from __future__ import annotations

import json
import posixpath
from typing import Any

from sentsweep.platform.confirm.stats import STAGE_DIR, STATE_FILE, Candidate, SeedRun
from sentsweep.platform.location import SweepLocation


def stage_location(location: SweepLocation) -> SweepLocation:
    """The stage's Tune experiment folder, ``<sweep folder>/confirmation``."""
    root = location.uri if location.filesystem is None else location.fs_path
    return SweepLocation(root, STAGE_DIR, location.filesystem, posixpath.join(location.uri, STAGE_DIR))


def read_state(location: SweepLocation) -> dict[str, Any] | None:
    """The stage's saved state (None before the stage began: the file is missing). A storage that does not answer
    is a :class:`~sentsweep.errors.StorageError` (never "not begun", which would fit the search again), an
    unreadable file a :class:`ConfigError` naming it."""
    return location.read_json_object(STATE_FILE, "the confirmation stage's candidates and seeds")


def write_state(location: SweepLocation, state: dict[str, Any]) -> None:
    location.write_text(STATE_FILE, json.dumps(state, indent=1, default=str))


def stage_points(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The confirmation trials' configs: every candidate with every further seed."""
    return [{**state["configs"][c["trial_id"]], "seed": seed}
            for c in state["candidates"] for seed in state["seeds"][c["trial_id"]]]


def candidate_from(raw: dict[str, Any]) -> Candidate:
    """A candidate as the state file holds it."""
    return Candidate(raw["rank"], raw["trial_id"], raw["params"], [SeedRun(**r) for r in raw["runs"]])
