"""The search: the pruning-aware Optuna searcher and ASHA, the study in the sweep folder, and warm starts.
Names are imported on first use, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every name another part of the code imports from this sub-package, by the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.search.convergence": ("record_convergence",),
    "sentsweep.platform.search.samplers": ("random_suggestions",),
    "sentsweep.platform.search.scheduler": ("build_scheduler", "recall", "scheduler_label"),
    "sentsweep.platform.search.searcher": ("PruningAwareOptunaSearch", "TUNE_TRIAL_ATTR", "build_searcher",
                                           "mark_search_over", "search_results"),
    "sentsweep.platform.search.study_store": ("JOURNAL_FILE", "StudyStore", "load_study", "serve_dashboard",
                                              "sweep_study_storage"),
    "sentsweep.platform.search.warm_start": ("load_history", "measured_data"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
