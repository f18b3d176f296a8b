"""The search: the pruning-aware Optuna searcher and ASHA, objectives and the Pareto front, the study store in the
sweep folder, and warm starts from an earlier sweep's study.

The names below are imported on first use, so importing the package loads neither Ray nor MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "FINAL_KEY": "sentsweep.platform.search.searcher",
    "JOURNAL_FILE": "sentsweep.platform.search.study_store",
    "OBJECTIVES_TAG": "sentsweep.platform.search.pareto_front",
    "Objective": "sentsweep.platform.search.objectives",
    "PARETO_ARTIFACTS": "sentsweep.platform.search.pareto_front",
    "PARETO_NAME": "sentsweep.platform.search.pareto_front",
    "PARETO_TAG": "sentsweep.platform.search.pareto_front",
    "PruningAwareOptunaSearch": "sentsweep.platform.search.searcher",
    "StudyStore": "sentsweep.platform.search.study_store",
    "TIME_TOTAL_KEY": "sentsweep.platform.search.objectives",
    "TUNE_TRIAL_ATTR": "sentsweep.platform.search.searcher",
    "build_scheduler": "sentsweep.platform.search.searcher",
    "build_searcher": "sentsweep.platform.search.searcher",
    "check_objectives": "sentsweep.platform.search.objectives",
    "extra_dev_sets": "sentsweep.platform.search.objectives",
    "is_final": "sentsweep.platform.search.searcher",
    "is_warm_start": "sentsweep.platform.search.warm_start",
    "load_history": "sentsweep.platform.search.warm_start",
    "load_study": "sentsweep.platform.search.study_store",
    "mark_search_over": "sentsweep.platform.search.search_state",
    "measured_data": "sentsweep.platform.search.warm_start",
    "objective_value": "sentsweep.platform.search.objectives",
    "parse_objective": "sentsweep.platform.search.objectives",
    "random_suggestions": "sentsweep.platform.search.samplers",
    "record_front": "sentsweep.platform.search.pareto_front",
    "scheduler_label": "sentsweep.platform.search.searcher",
    "search_results": "sentsweep.platform.search.search_state",
    "serve_dashboard": "sentsweep.platform.search.dashboard",
    "sweep_study_storage": "sentsweep.platform.search.dashboard",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
