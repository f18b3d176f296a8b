"""The MLflow view of a sweep folder, written by the driver alone (parent run, trials' runs, store checks, the
reconcile ``sentsweep sync`` runs). Names are imported on first use, so importing it loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every name another part of the code imports from this sub-package, by the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.tracking.parent_run": ("SweepRun", "flatten", "package_versions", "run_page"),
    "sentsweep.platform.tracking.reachability": ("first_line", "probe", "store_answers"),
    "sentsweep.platform.tracking.run_writes": ("failing_quickly",),
    "sentsweep.platform.tracking.store": ("hidden_from_workers", "open_client", "refuse_sqlite_on_cluster"),
    "sentsweep.platform.tracking.trial_runs": ("Reconciled", "TrialRuns", "create_unique_run", "reconcile",
                                               "trial_folders"),
    "sentsweep.platform.tracking.trial_runs_callback": ("TrialRunsCallback", "last_error_line", "sweep_totals",
                                                        "trial_outcome"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
