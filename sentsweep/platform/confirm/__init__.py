"""The confirmation stage's decisions: the search's best configurations, their figures over further seeds, and the
winner chosen by a rule (the driver runs the stage). Names are imported on first use."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every name another part of the code imports from this sub-package, by the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.confirm.stage": ("STAGE_DIR", "STATE_FILE", "candidate_from", "decide",
                                         "ranked_by_rule", "read_state", "select_candidates", "stage_location",
                                         "stage_points", "stage_seeds", "write_state"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
