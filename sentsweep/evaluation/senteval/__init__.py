"""SentEval, as the toolkit runs it: its loaders, its three protocols, its PyTorch classifier, batched.

- :mod:`.settings`: the options (:class:`SentEvalOptions`) and the named classifier settings (``test``,
  ``fast``, ``lbfgs``);
- :mod:`.loaders`: SentEval's sample order and texts;
- :mod:`.batched` / :mod:`.sequential`: SentEval's logistic-regression fit, many at once / one at a time;
- :mod:`.validation`: the inner-k-fold, k-fold and split protocols;
- :mod:`.relatedness`: SICK-R's relatedness regressor;
- :mod:`.lbfgs`: the exact solver (setting ``lbfgs``);
- :mod:`.tasks`: the task names and groups;
- :mod:`.runner`: :func:`evaluate_senteval`.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in, imported on first use (:mod:`sentsweep.lazy_exports`).
_WHERE: dict[str, str] = {
    "CLASSIFIER_SETTINGS": "sentsweep.evaluation.senteval.settings",
    "CV_TASKS": "sentsweep.evaluation.senteval.tasks",
    "ClassifierSetting": "sentsweep.evaluation.senteval.settings",
    "DEFAULT_SEED": "sentsweep.evaluation.senteval.settings",
    "DEFAULT_SETTING": "sentsweep.evaluation.senteval.settings",
    "REG_GRID": "sentsweep.evaluation.senteval.settings",
    "SENTEVAL_OPTION_FIELDS": "sentsweep.evaluation.senteval.settings",
    "SENTEVAL_TASKS": "sentsweep.evaluation.senteval.tasks",
    "SICK_TASKS": "sentsweep.evaluation.senteval.tasks",
    "SentEvalOptions": "sentsweep.evaluation.senteval.settings",
    "TRANSFER_TASKS": "sentsweep.evaluation.senteval.tasks",
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

__all__ = sorted(_WHERE)
