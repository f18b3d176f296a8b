"""Evaluation of sentence embeddings: STS (cosine, Spearman), SentEval transfer tasks, diagnostics.

Everything takes an :class:`Embedder` (anything with ``encode(list[str]) -> np.ndarray``) and returns an
:class:`EvalResult` (flat x100 metrics + a table). No Ray or MLflow imports, no dependency on an encoder.

>>> result = evaluate(embedder, ["sts", "mr"])            # doctest: +SKIP
>>> result.metrics["sts_avg7"], result.metrics["mr_acc"]  # doctest: +SKIP
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in, imported on first use (:mod:`sentsweep.lazy_exports`).
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
    "scored_test_splits": "sentsweep.evaluation.suite",
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

__all__ = sorted(_WHERE)
