"""The confirmation stage's decisions: the search's best configurations, their figures over further seeds, and the
winner chosen by a rule. The driver runs the stage (:mod:`sentsweep.platform.driver.confirmation`).

The names below are imported on first use, so importing the package loads neither Ray nor MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "choose_winner": "sentsweep.platform.confirm.stage",
    "decide": "sentsweep.platform.confirm.stage",
    "read_state": "sentsweep.platform.confirm.stage",
    "select_candidates": "sentsweep.platform.confirm.stage",
    "stage_location": "sentsweep.platform.confirm.stage",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
