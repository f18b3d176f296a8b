"""MLflow tracking shared by trials and the sweep driver: the vocabulary and a trial's logger.

The names are imported on first use (:mod:`sentsweep.lazy_exports`): reading runs back (``sentsweep compare``) needs
the vocabulary, not the trial logger and what it brings (the evaluation suite, torch).
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "MlflowTrialLogger": "sentsweep.tracking.trial_logger",
    "NullLogger": "sentsweep.tracking.trial_logger",
    "Status": "sentsweep.tracking.vocabulary",
    "TrackingSettings": "sentsweep.tracking.vocabulary",
    "TrialLogger": "sentsweep.tracking.trial_logger",
    "make_trial_logger": "sentsweep.tracking.trial_logger",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
