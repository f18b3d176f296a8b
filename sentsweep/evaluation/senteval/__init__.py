"""SentEval, as the toolkit runs it: its loaders, its three protocols, its PyTorch classifier, batched.

- :mod:`.settings`: the options (:class:`SentEvalOptions`) and the named classifier settings (``test``,
  ``fast``, ``lbfgs``);
- :mod:`.loaders`: SentEval's sample order and texts;
- :mod:`.batched` / :mod:`.sequential`: SentEval's logistic-regression fit, many at once / one at a time;
- :mod:`.validation`: the inner-k-fold, k-fold and split protocols;
- :mod:`.relatedness`: SICK-R's relatedness regressor;
- :mod:`.lbfgs`: the exact solver (setting ``lbfgs``);
- :mod:`.runner`: :func:`evaluate_senteval`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentsweep.lazy_exports import lazy_exports

#: Where each public name lives, imported on first use (:mod:`sentsweep.lazy_exports`).
_WHERE: dict[str, str] = {
    "CLASSIFIER_SETTINGS": "sentsweep.evaluation.senteval.settings",
    "CV_TASKS": "sentsweep.evaluation.senteval.runner",
    "ClassifierSetting": "sentsweep.evaluation.senteval.settings",
    "DEFAULT_SEED": "sentsweep.evaluation.senteval.settings",
    "DEFAULT_SETTING": "sentsweep.evaluation.senteval.settings",
    "REG_GRID": "sentsweep.evaluation.senteval.settings",
    "SENTEVAL_OPTION_FIELDS": "sentsweep.evaluation.senteval.settings",
    "SENTEVAL_TASKS": "sentsweep.evaluation.senteval.runner",
    "SICK_TASKS": "sentsweep.evaluation.senteval.runner",
    "SentEvalOptions": "sentsweep.evaluation.senteval.settings",
    "TRANSFER_TASKS": "sentsweep.evaluation.senteval.runner",
    "classifier_setting": "sentsweep.evaluation.senteval.settings",
    "evaluate_senteval": "sentsweep.evaluation.senteval.runner",
    "kfold_test_accuracy": "sentsweep.evaluation.senteval.lbfgs",
    "nested_cv_accuracy": "sentsweep.evaluation.senteval.lbfgs",
    "pair_features": "sentsweep.evaluation.senteval.runner",
    "reg_to_c": "sentsweep.evaluation.senteval.lbfgs",
    "resolve_senteval_tasks": "sentsweep.evaluation.senteval.runner",
    "select_reg": "sentsweep.evaluation.senteval.lbfgs",
    "split_test_accuracy": "sentsweep.evaluation.senteval.lbfgs",
}
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)

if TYPE_CHECKING:
    from sentsweep.evaluation.senteval.lbfgs import (
        kfold_test_accuracy,
        nested_cv_accuracy,
        reg_to_c,
        select_reg,
        split_test_accuracy,
    )
    from sentsweep.evaluation.senteval.runner import (
        CV_TASKS,
        SENTEVAL_TASKS,
        SICK_TASKS,
        TRANSFER_TASKS,
        evaluate_senteval,
        pair_features,
        resolve_senteval_tasks,
    )
    from sentsweep.evaluation.senteval.settings import (
        CLASSIFIER_SETTINGS,
        DEFAULT_SEED,
        DEFAULT_SETTING,
        REG_GRID,
        SENTEVAL_OPTION_FIELDS,
        ClassifierSetting,
        SentEvalOptions,
        classifier_setting,
    )

__all__ = [
    "CLASSIFIER_SETTINGS",
    "CV_TASKS",
    "DEFAULT_SEED",
    "DEFAULT_SETTING",
    "REG_GRID",
    "SENTEVAL_OPTION_FIELDS",
    "SENTEVAL_TASKS",
    "SICK_TASKS",
    "TRANSFER_TASKS",
    "ClassifierSetting",
    "SentEvalOptions",
    "classifier_setting",
    "evaluate_senteval",
    "kfold_test_accuracy",
    "nested_cv_accuracy",
    "pair_features",
    "reg_to_c",
    "resolve_senteval_tasks",
    "select_reg",
    "split_test_accuracy",
]
