"""``evaluate_senteval``: embed every task's sentences once, then run each task's SentEval protocol.

Tasks and what each reports (x100 unless said):

- MR, CR, SUBJ, MPQA: nested k-fold (:func:`~.validation.inner_kfold_classifier`): ``<task>_acc``;
- TREC, MRPC: k-fold selection on train, test (:func:`~.validation.kfold_classifier`): ``trec_acc``,
  ``mrpc_acc`` and ``mrpc_f1``; MRPC features ``[|u-v|, u*v]`` (``mrpc_features="full"`` puts ``u, v``
  in front);
- SST2: selection on dev (:func:`~.validation.split_classifier`): ``sst2_acc``;
- SICK-E (``sick_entailment``): 3 classes on ``[|u-v|, u*v]``, selection on SICK_trial:
  ``sick_entailment_acc``;
- SICK-R (``sick_relatedness``): SentEval's relatedness regressor (:mod:`.relatedness`, whatever the
  setting): ``sick_relatedness_pearson``, ``_spearman`` (x100) and ``_mse`` (raw).

``senteval_avg`` is the mean accuracy of the seven transfer tasks (MR .. SST2) that ran, as SimCSE
averages them. The classifier is the named setting's (:mod:`.settings`): SentEval's own PyTorch
logistic regression by default, all its fits of a task trained as one batched problem
(:mod:`.batched`).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import f1_score
from torch import Tensor

from sentsweep.errors import DataError
from sentsweep.evaluation._encoding import DEFAULT_BATCH_SIZE, encode_lookup
from sentsweep.evaluation.protocols import Embedder, ProgressFn
from sentsweep.evaluation.results import EvalResult
from sentsweep.evaluation.senteval import lbfgs
from sentsweep.evaluation.senteval.batched import train_batched
from sentsweep.evaluation.senteval.loaders import TaskData, load_task
from sentsweep.evaluation.senteval.relatedness import relatedness_regression
from sentsweep.evaluation.senteval.settings import (
    DEFAULT_SEED,
    DEFAULT_SETTING,
    REG_GRID,
    SENTEVAL_OPTION_FIELDS,
    SentEvalOptions,
)
from sentsweep.evaluation.senteval.tasks import CV_TASKS, SENTEVAL_TASKS, TRANSFER_TASKS
from sentsweep.evaluation.senteval.validation import (
    Engine,
    Outcome,
    inner_kfold_classifier,
    kfold_classifier,
    split_classifier,
)

#: Classes per classification task.
NCLASSES: dict[str, int] = {**dict.fromkeys(CV_TASKS, 2), "trec": 6, "mrpc": 2, "sst2": 2, "sick_entailment": 3}
_COLUMNS = ["task", "setting", "protocol", "n_train", "n_test", "acc", "dev_acc", "f1", "pearson", "spearman",
            "mse", "reg", "fit_seconds", "note"]


def pair_features(u: np.ndarray, v: np.ndarray, include_uv: bool = False) -> np.ndarray:
    """Features of a sentence pair: SentEval's ``[|u - v|, u * v]``, or ``[u, v, |u - v|, u * v]``."""
    u = np.asarray(u, dtype=np.float32)
    v = np.asarray(v, dtype=np.float32)
    if u.shape != v.shape or u.ndim != 2:
        raise ValueError(f"expected two (n, d) arrays of the same shape, got {u.shape} and {v.shape}")
    parts = [u, v] if include_uv else []
    return np.concatenate([*parts, np.abs(u - v), u * v], axis=1)


def resolve_senteval_tasks(tasks: Sequence[str] | str) -> list[str]:
    """Validate task names (comma-separated string or sequence), dropping repeats; unknown -> ValueError."""
    if isinstance(tasks, str):
        tasks = [tasks]
    names = [n.strip().lower() for t in tasks for n in t.split(",") if n.strip()]
    unknown = [n for n in names if n not in SENTEVAL_TASKS]
    if unknown:
        raise ValueError(f"unknown SentEval task(s) {unknown}; valid names: {', '.join(SENTEVAL_TASKS)}")
    if not names:
        raise ValueError(f"no SentEval task given; valid names: {', '.join(SENTEVAL_TASKS)}")
    return list(dict.fromkeys(names))


def evaluate_senteval(
    embedder: Embedder,
    tasks: Sequence[str] | str | None = None,
    data_dir: str | Path | None = None,
    kfold: int | None = None,
    inner_kfold: int | None = None,
    seed: int = DEFAULT_SEED,
    *,
    setting: str = DEFAULT_SETTING,
    mrpc_features: str = "diff_prod",
    optional: Collection[str] | None = None,
    regs: Sequence[float] = REG_GRID,
    max_iter: int = lbfgs.DEFAULT_MAX_ITER,
    tol: float = lbfgs.DEFAULT_TOL,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
    engine: Engine = train_batched,
) -> EvalResult:
    """Evaluate ``embedder`` on SentEval tasks with SentEval's protocols (see the module docstring).

    ``tasks=None`` means all of :data:`SENTEVAL_TASKS`, each optional: a task whose data is absent is
    skipped with a note. Tasks named explicitly are required (absent data raises DataError) unless also
    listed in ``optional``. ``setting`` names the classifier (``test``, ``fast``, ``lbfgs``); ``kfold``
    None takes the setting's, ``inner_kfold`` None takes ``kfold``. ``max_iter`` and ``tol`` are the
    exact solver's; ``engine`` trains the PyTorch fits (batched by default; the sequential toolkit loop
    gives the same figures, slower).

    The table has one row per requested task: task, setting, protocol, n_train, n_test, acc, dev_acc,
    f1, pearson, spearman, mse, reg (selected L2; per outer fold for the cross-validated tasks),
    fit_seconds (classifier wall time) and note; for the cross-validated tasks n_train and n_test are
    both the dataset size (each example is tested once).
    """
    options = SentEvalOptions(setting=setting, kfold=kfold, inner_kfold=inner_kfold, seed=seed,
                              mrpc_features=mrpc_features)
    if tasks is None:
        names, optional_set = list(SENTEVAL_TASKS), set(SENTEVAL_TASKS)
    else:
        names = resolve_senteval_tasks(tasks)
        optional_set = set(resolve_senteval_tasks(list(optional))) if optional else set()
    from sentsweep.data import resolve_data_dir

    source = resolve_data_dir(data_dir)
    loaded: dict[str, TaskData] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            loaded[name] = load_task(name, source)
        except DataError as err:
            if name not in optional_set:
                raise
            rows[name] = {"task": name, "note": f"skipped: data absent ({err})"}

    metrics: dict[str, float] = {}
    n_fits = 0
    if loaded:
        all_texts = [s for task in loaded.values() for s in task.texts()]
        emb, row = encode_lookup(embedder, all_texts, batch_size, progress)
        for name, task in loaded.items():
            fits = lbfgs.LbfgsFits(max_iter=max_iter, tol=tol)  # per task: figures never depend on others
            started = time.perf_counter()
            rows[name], task_metrics = _run_task(task, emb, row, options, regs, fits, engine)
            rows[name]["fit_seconds"] = round(time.perf_counter() - started, 2)
            n_fits += fits.total
            if fits.unconverged:
                rows[name]["note"] = f"{fits.unconverged} fit(s) reached max_iter={max_iter}"
            metrics.update(task_metrics)
        accuracies = [metrics[f"{n}_acc"] for n in TRANSFER_TASKS if n in loaded]
        if accuracies:
            metrics["senteval_avg"] = float(np.mean(accuracies))

    table = pd.DataFrame([rows[n] for n in names], columns=_COLUMNS)
    table[["n_train", "n_test"]] = table[["n_train", "n_test"]].astype("Int64")  # NA for skipped tasks
    info: dict[str, Any] = {field: getattr(options, name) for field, name in SENTEVAL_OPTION_FIELDS.items()}
    info.update(senteval_kfold=options.folds, senteval_inner_kfold=options.inner_folds,
                senteval_classifier=options.classifier.describe(), senteval_regs=list(regs))
    if not options.classifier.is_toolkit:
        info.update(senteval_fits=n_fits, senteval_tol=tol)
    info.update(data_root=str(source.root), data_is_sample=bool(source.is_sample))
    return EvalResult(metrics, table, info)


def _matrix(values: np.ndarray) -> Tensor:
    return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32))


def _run_task(task: TaskData, emb: np.ndarray, row: dict[str, int], options: SentEvalOptions,
              regs: Sequence[float], fits: lbfgs.LbfgsFits, engine: Engine) -> tuple[dict[str, Any], dict[str, float]]:
    """Featurise one task and run its protocol; returns its table row and its metrics."""

    def features(split: str) -> tuple[np.ndarray, np.ndarray]:
        data = task.splits[split]
        u = emb[[row[s] for s in data.a]]
        if data.b is None:
            return u, data.y
        v = emb[[row[s] for s in data.b]]
        return pair_features(u, v, include_uv=task.name == "mrpc" and options.mrpc_features == "full"), data.y

    setting = options.classifier
    out: dict[str, Any] = {"task": task.name, "setting": setting.name, "f1": math.nan, "pearson": math.nan,
                           "spearman": math.nan, "mse": math.nan, "note": ""}
    if task.name == "sick_relatedness":
        (Xtr, ytr), (Xdv, ydv), (Xte, yte) = features("train"), features("dev"), features("test")
        res = relatedness_regression(_matrix(Xtr), ytr, _matrix(Xdv), ydv, _matrix(Xte), yte, options.seed)
        out.update(protocol=f"relatedness regressor, dev selection ({res.epochs} epochs)", n_train=len(ytr),
                   n_test=len(yte), acc=math.nan, dev_acc=res.dev_pearson, pearson=res.pearson,
                   spearman=res.spearman, mse=res.mse, reg="0", setting="toolkit regressor")
        metrics = {f"{task.name}_{k}": out[k] for k in ("pearson", "spearman", "mse")}
        return out, metrics
    nclasses = NCLASSES[task.name]
    exact = not setting.is_toolkit  # the exact solver works on float64 numpy arrays
    if task.name in CV_TASKS:
        X, y = features("all")
        out.update(protocol=f"{options.folds}-fold cv, inner {options.inner_folds}-fold selection",
                   n_train=len(y), n_test=len(y))
        if exact:
            res = _lbfgs_outcome(lbfgs.nested_cv_accuracy(_f64(X), y, options.folds, options.inner_folds,
                                                          options.seed, regs, fits))
        else:
            res = inner_kfold_classifier(_matrix(X), y, nclasses, setting, kfold=options.folds,
                                         inner_kfold=options.inner_folds, seed=options.seed, regs=regs,
                                         engine=engine)
    else:
        (Xtr, ytr), (Xte, yte) = features("train"), features("test")
        out.update(n_train=len(ytr), n_test=len(yte))
        if "dev" in task.splits:
            Xdv, ydv = features("dev")
            out["protocol"] = "train/dev/test, selection on dev"
            if exact:
                res = _lbfgs_outcome(lbfgs.split_test_accuracy(_f64(Xtr), ytr, _f64(Xdv), ydv, _f64(Xte), yte,
                                                               options.seed, regs, fits))
            else:
                res = split_classifier(_matrix(Xtr), ytr, _matrix(Xdv), ydv, _matrix(Xte), yte, nclasses, setting,
                                       seed=options.seed, regs=regs, engine=engine)
        else:
            out["protocol"] = f"train/test, {options.folds}-fold selection on train"
            if exact:
                res = _lbfgs_outcome(lbfgs.kfold_test_accuracy(_f64(Xtr), ytr, _f64(Xte), yte, options.folds,
                                                               options.seed, regs, fits))
            else:
                res = kfold_classifier(_matrix(Xtr), ytr, _matrix(Xte), yte, nclasses, setting, kfold=options.folds,
                                       seed=options.seed, regs=regs, engine=engine)
        if task.name == "mrpc":
            out["f1"] = float(round(100 * f1_score(yte, res.y_pred, pos_label=1), 2))
    out.update(acc=res.acc, dev_acc=res.dev_acc, reg=_format_regs(res.regs))
    metrics = {f"{task.name}_acc": res.acc}
    if task.name == "mrpc":
        metrics["mrpc_f1"] = out["f1"]
    return out, metrics


def _f64(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64)


def _lbfgs_outcome(result: dict[str, Any]) -> Outcome:
    return Outcome(result["acc"], result["dev_acc"], result["regs"], result.get("y_pred"))


def _format_regs(regs: Sequence[float]) -> str:
    counts = Counter(regs)
    if len(counts) == 1:
        return f"{regs[0]:g}"
    return ", ".join(f"{r:g} x{c}" for r, c in sorted(counts.items()))
