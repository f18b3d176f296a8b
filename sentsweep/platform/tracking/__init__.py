"""The MLflow view of a sweep folder, written by the driver alone: the parent run, the trials' runs, the checks
of the tracking store, and the reconcile of MLflow with the folder that ``sentsweep sync`` runs.

The names below are imported on first use, so importing the package loads neither Ray nor MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "SweepRun": "sentsweep.platform.tracking.parent_run",
    "TrialRunsCallback": "sentsweep.platform.tracking.trial_runs_callback",
    "create_unique_run": "sentsweep.platform.tracking.trial_runs",
    "first_line": "sentsweep.platform.tracking.reachability",
    "flatten": "sentsweep.platform.tracking.parent_run",
    "hidden_from_workers": "sentsweep.platform.tracking.store",
    "open_client": "sentsweep.platform.tracking.store",
    "package_versions": "sentsweep.platform.tracking.parent_run",
    "refuse_sqlite_on_cluster": "sentsweep.platform.tracking.store",
    "store_answers": "sentsweep.platform.tracking.reachability",
    "trial_outcome": "sentsweep.platform.tracking.trial_runs_callback",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
