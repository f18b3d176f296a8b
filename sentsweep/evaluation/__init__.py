"""Evaluation of sentence embeddings: STS (cosine, Spearman), SentEval transfer tasks, diagnostics.

Everything takes an :class:`Embedder` (anything with ``encode(list[str]) -> np.ndarray``) and returns an
:class:`EvalResult` (flat x100 metrics + a table). No Ray or MLflow imports, no dependency on an encoder.

>>> result = evaluate(embedder, ["sts", "mr"])            # doctest: +SKIP
>>> result.metrics["sts_avg7"], result.metrics["mr_acc"]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentsweep.lazy_exports import lazy_exports

#: Where each public name lives, imported on first use (:mod:`sentsweep.lazy_exports`).
_WHERE: dict[str, str] = {
    "AVG7_KEYS": "sentsweep.evaluation.sts",
    "CLASSIFIER_SETTINGS": "sentsweep.evaluation.senteval",
    "Embedder": "sentsweep.evaluation.protocols",
    "EvalResult": "sentsweep.evaluation.results",
    "ProgressFn": "sentsweep.evaluation.protocols",
    "REG_GRID": "sentsweep.evaluation.senteval",
    "SELECTION_METRIC": "sentsweep.evaluation.sts",
    "SENTEVAL_OPTION_FIELDS": "sentsweep.evaluation.senteval",
    "SENTEVAL_TASKS": "sentsweep.evaluation.senteval",
    "STS_TASKS": "sentsweep.evaluation.sts",
    "STS_TASK_SPLITS": "sentsweep.evaluation.sts",
    "SentEvalOptions": "sentsweep.evaluation.senteval",
    "StsEvaluator": "sentsweep.evaluation.sts",
    "StsSet": "sentsweep.evaluation.sts",
    "TASK_GROUPS": "sentsweep.evaluation.suite",
    "compare_distributions": "sentsweep.evaluation.analysis",
    "evaluate": "sentsweep.evaluation.suite",
    "evaluate_pairs": "sentsweep.evaluation.sts",
    "evaluate_senteval": "sentsweep.evaluation.senteval",
    "evaluate_sts": "sentsweep.evaluation.sts",
    "kfold_test_accuracy": "sentsweep.evaluation.senteval",
    "load_sts_sets": "sentsweep.evaluation.sts",
    "nested_cv_accuracy": "sentsweep.evaluation.senteval",
    "pair_features": "sentsweep.evaluation.senteval",
    "random_partners": "sentsweep.evaluation.analysis",
    "rank_errors": "sentsweep.evaluation.analysis",
    "reg_to_c": "sentsweep.evaluation.senteval",
    "select_reg": "sentsweep.evaluation.senteval",
    "similarity_distribution": "sentsweep.evaluation.analysis",
    "spearman": "sentsweep.evaluation.sts",
    "spearman_cosine": "sentsweep.evaluation.sts",
    "split_tasks": "sentsweep.evaluation.suite",
    "split_test_accuracy": "sentsweep.evaluation.senteval",
    "sts_avg7": "sentsweep.evaluation.sts",
    "subset_spearman": "sentsweep.evaluation.sts",
    "summary": "sentsweep.evaluation.analysis",
    "valid_task_names": "sentsweep.evaluation.suite",
    "worst_pairs": "sentsweep.evaluation.analysis",
}
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)

if TYPE_CHECKING:
    from sentsweep.evaluation.analysis import (
        compare_distributions,
        random_partners,
        rank_errors,
        similarity_distribution,
        summary,
        worst_pairs,
    )
    from sentsweep.evaluation.protocols import Embedder, ProgressFn
    from sentsweep.evaluation.results import EvalResult
    from sentsweep.evaluation.senteval import (
        CLASSIFIER_SETTINGS,
        REG_GRID,
        SENTEVAL_OPTION_FIELDS,
        SENTEVAL_TASKS,
        SentEvalOptions,
        evaluate_senteval,
        kfold_test_accuracy,
        nested_cv_accuracy,
        pair_features,
        reg_to_c,
        select_reg,
        split_test_accuracy,
    )
    from sentsweep.evaluation.sts import (
        AVG7_KEYS,
        SELECTION_METRIC,
        STS_TASK_SPLITS,
        STS_TASKS,
        StsEvaluator,
        StsSet,
        evaluate_pairs,
        evaluate_sts,
        load_sts_sets,
        spearman,
        spearman_cosine,
        sts_avg7,
        subset_spearman,
    )
    from sentsweep.evaluation.suite import TASK_GROUPS, evaluate, split_tasks, valid_task_names

__all__ = [
    "AVG7_KEYS",
    "CLASSIFIER_SETTINGS",
    "REG_GRID",
    "SELECTION_METRIC",
    "SENTEVAL_OPTION_FIELDS",
    "SENTEVAL_TASKS",
    "STS_TASKS",
    "STS_TASK_SPLITS",
    "SentEvalOptions",
    "TASK_GROUPS",
    "Embedder",
    "EvalResult",
    "ProgressFn",
    "StsEvaluator",
    "StsSet",
    "compare_distributions",
    "evaluate",
    "evaluate_pairs",
    "evaluate_senteval",
    "evaluate_sts",
    "kfold_test_accuracy",
    "load_sts_sets",
    "nested_cv_accuracy",
    "pair_features",
    "random_partners",
    "rank_errors",
    "reg_to_c",
    "select_reg",
    "similarity_distribution",
    "spearman",
    "spearman_cosine",
    "split_tasks",
    "split_test_accuracy",
    "sts_avg7",
    "subset_spearman",
    "summary",
    "valid_task_names",
    "worst_pairs",
]
