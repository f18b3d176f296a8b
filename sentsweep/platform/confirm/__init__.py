"""The confirmation stage's decisions: the search's best configurations, their figures over further seeds, and the
winner chosen by a rule (the driver runs the stage). Names are imported on first use."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

_WHERE = dict.fromkeys(("choose_winner", "decide", "read_state", "select_candidates", "stage_location"),
                       "sentsweep.platform.confirm.stage")
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
