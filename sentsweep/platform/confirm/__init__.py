"""The confirmation stage's decisions: the search's best configurations, their figures over further seeds, and the
winner chosen by a rule. The driver runs the stage (:mod:`sentsweep.platform.driver.confirmation`).

The names below are imported on first use, so importing the package loads neither Ray nor MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "Candidate": "sentsweep.platform.confirm.stats",
    "ConfirmationOutcome": "sentsweep.platform.confirm.outcome",
    "read_state": "sentsweep.platform.confirm.state",
    "stage_location": "sentsweep.platform.confirm.state",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
