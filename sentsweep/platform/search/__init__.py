"""The search: the pruning-aware Optuna searcher and ASHA, the study in the sweep folder, and warm starts.
Names are imported on first use, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "JOURNAL_FILE": "sentsweep.platform.search.study_store",
    "PruningAwareOptunaSearch": "sentsweep.platform.search.searcher",
    "StudyStore": "sentsweep.platform.search.study_store",
    "TUNE_TRIAL_ATTR": "sentsweep.platform.search.searcher",
    "build_scheduler": "sentsweep.platform.search.scheduler",
    "build_searcher": "sentsweep.platform.search.searcher",
    "is_reference": "sentsweep.platform.results",
    "is_warm_start": "sentsweep.platform.results",
    "load_history": "sentsweep.platform.search.warm_start",
    "load_study": "sentsweep.platform.search.study_store",
    "mark_search_over": "sentsweep.platform.search.search_state",
    "measured_data": "sentsweep.platform.search.warm_start",
    "random_suggestions": "sentsweep.platform.search.samplers",
    "scheduler_label": "sentsweep.platform.search.scheduler",
    "search_results": "sentsweep.platform.search.search_state",
    "serve_dashboard": "sentsweep.platform.search.dashboard",
    "sweep_study_storage": "sentsweep.platform.search.dashboard",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
