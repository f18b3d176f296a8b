"""The confirmation stage: the search's best configurations trained again with further seeds, their figures, and
the winner chosen by a rule.

The names below are imported on first use, so importing the package loads neither Ray nor MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "Candidate": "sentsweep.platform.confirm.stats",
    "ConfirmationOutcome": "sentsweep.platform.confirm.outcome",
    "StageTrials": "sentsweep.platform.confirm.stage",
    "end_stage_run": "sentsweep.platform.confirm.stage_run",
    "read_state": "sentsweep.platform.confirm.state",
    "run_confirmation": "sentsweep.platform.confirm.stage",
    "schedule_stage_run_if_answered": "sentsweep.platform.confirm.stage_run",
    "stage_location": "sentsweep.platform.confirm.state",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
