"""SentEval transfer tasks: logistic regression on frozen embeddings (METHODS.md, "Shared ground").

Protocols, as in SentEval (Conneau & Kiela, 2018, ``senteval/tools/validation.py``):

* MR, CR, SUBJ, MPQA (no official split): outer stratified ``kfold``-fold cross-validation; inside
  each outer training part the L2 strength is chosen by an inner stratified ``inner_kfold``-fold
  cross-validation, the classifier is refit on the whole outer training part and scored on the outer
  test fold. Reported: the mean of the outer test accuracies (``dev_acc`` is the mean best inner one).
* TREC and MRPC (train/test): the L2 strength is chosen by stratified ``kfold``-fold cross-validation
  on train, then the classifier is fit on all of train and scored on test. MRPC features are
  ``[u, v, |u - v|, u * v]`` (``mrpc_features="diff_prod"`` gives SentEval's ``[|u - v|, u * v]``);
  MRPC also reports F1 of the paraphrase class.
* SST2 (train/dev/test): the L2 strength is chosen on dev, the classifier fit on train, scored on test.

The L2 grid is SentEval's PyTorch grid, ``{1e-5, 1e-4, 1e-3, 1e-2}``, used there as Adam's weight decay
on the *mean* cross-entropy. Weight decay ``reg`` on the mean loss is the penalty ``reg/2 * ||w||^2``,
and ``mean_loss + reg/2 ||w||^2`` has the same minimiser as scikit-learn's ``C * sum_loss + 1/2 ||w||^2``
with ``C = 1 / (reg * n_train)`` (see :func:`reg_to_c`); ``n_train`` is the size of the set that one fit
sees, so the strength per example is the same in inner folds and in the refit. Two deliberate
departures: scikit-learn solves the convex problem exactly (lbfgs) where SentEval runs Adam with early
stopping, and its intercept is not penalised; so figures agree with published SentEval numbers to a
few tenths, not digit for digit. Features are NOT standardised, following SentEval (the embedding's
scale is part of what is evaluated; the mapping above is stated in its units).

Cost: ``kfold * (inner_kfold * 4 + 1)`` fits per cross-validated task (410 at the default 10/10) and
``4 * kfold + 1`` for TREC and MRPC. Measured with 384-d all-MiniLM-L6-v2 embeddings on the shared data
(2-core box, 6 tasks): 154 s CPU with ``inner_kfold=10``, 95 s with ``inner_kfold=5`` (figures within
0.2 points), not counting encoding.

Every distinct sentence of all requested tasks is encoded once. A default task whose data files are
absent (SST2 is not in the shared data) is skipped with a note in the table; a task asked for by name
whose data is absent raises :class:`sentsweep.errors.DataError`.
"""

from __future__ import annotations

import math
import time
import warnings
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from sentsweep.errors import DataError
from sentsweep.evaluation._encoding import DEFAULT_BATCH_SIZE, encode_lookup
from sentsweep.evaluation.protocols import Embedder, ProgressFn
from sentsweep.evaluation.results import EvalResult

#: The SentEval transfer tasks, in SentEval's usual reporting order (the default of evaluate_senteval).
SENTEVAL_TASKS: tuple[str, ...] = ("mr", "cr", "subj", "mpqa", "trec", "mrpc", "sst2")
#: Tasks scored by nested cross-validation (no official split).
CV_TASKS: tuple[str, ...] = ("mr", "cr", "subj", "mpqa")
#: SentEval's L2 grid (weight decay on the mean loss), smallest first.
REG_GRID: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)
#: SentEval's default seed, used for every fold split.
DEFAULT_SEED = 1111
#: lbfgs iteration cap; fits that reach it are counted in the table's ``note``.
DEFAULT_MAX_ITER = 1000
#: lbfgs tolerance on the projected gradient. scikit-learn's default, 1e-4, stops early enough to move
#: MR accuracy by up to 0.3 points from the exact optimum; 1e-5 stays within about 0.05 of it.
DEFAULT_TOL = 1e-5


# --------------------------------------------------------------------------------------------------
# Classifier protocols on feature matrices


def reg_to_c(reg: float, n_train: int) -> float:
    """scikit-learn's ``C`` for SentEval's weight decay ``reg`` on the mean loss over ``n_train`` examples.

    ``mean_i loss_i + reg/2 ||w||^2`` and ``C sum_i loss_i + 1/2 ||w||^2`` have the same minimiser when
    ``C = 1 / (reg * n_train)``.
    """
    if reg <= 0 or n_train <= 0:
        raise ValueError(f"reg and n_train must be positive, got reg={reg}, n_train={n_train}")
    return 1.0 / (reg * n_train)


def pair_features(u: np.ndarray, v: np.ndarray, include_uv: bool = True) -> np.ndarray:
    """Features of a sentence pair: ``[u, v, |u - v|, u * v]``, or ``[|u - v|, u * v]`` without u, v."""
    u = np.asarray(u, dtype=np.float32)
    v = np.asarray(v, dtype=np.float32)
    if u.shape != v.shape or u.ndim != 2:
        raise ValueError(f"expected two (n, d) arrays of the same shape, got {u.shape} and {v.shape}")
    parts = [u, v] if include_uv else []
    return np.concatenate([*parts, np.abs(u - v), u * v], axis=1)


@dataclass
class _Fits:
    """Runs every lbfgs fit of one task: warm starts, single-threaded BLAS, and counts.

    Each fit at a given reg starts from the latest solution at that reg (the previous fold's, whose
    training data overlap by (k-2)/(k-1)), else from the solution at the next stronger reg. The problem
    is convex, so a warm start changes the time taken, and the solution only within ``tol``. BLAS runs
    on one thread: these fits are memory-bound matrix-vector products, and a multi-threaded OpenBLAS
    spin-waits on a busy machine (five times the CPU time measured on the 2-core development box).
    """

    max_iter: int = DEFAULT_MAX_ITER
    tol: float = DEFAULT_TOL
    total: int = 0
    unconverged: int = 0
    last: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def path(
        self, X: np.ndarray, y: np.ndarray, regs: Sequence[float], seed: int
    ) -> dict[float, LogisticRegression]:
        """Fit one model per reg of ``regs`` on ``(X, y)``, strongest regularisation first.

        Returns fitted models keyed by reg.
        """
        classes = np.unique(y)
        out: dict[float, LogisticRegression] = {}
        previous: LogisticRegression | None = None
        with threadpool_limits(limits=1, user_api="blas"):
            for reg in sorted(regs, reverse=True):
                model = LogisticRegression(
                    C=reg_to_c(reg, len(y)),
                    max_iter=self.max_iter,
                    tol=self.tol,
                    warm_start=True,
                    random_state=seed,
                )
                start = self.last.get(reg)
                if (
                    start is not None
                    and np.array_equal(start[0], classes)
                    and start[1].shape[1] == X.shape[1]
                ):
                    model.coef_, model.intercept_ = start[1].copy(), start[2].copy()
                elif previous is not None:
                    model.coef_, model.intercept_ = previous.coef_.copy(), previous.intercept_.copy()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.fit(X, y)
                self.total += 1
                self.unconverged += int(np.max(model.n_iter_) >= self.max_iter)
                self.last[reg] = (classes, model.coef_.copy(), model.intercept_.copy())
                out[reg] = previous = model
        return out

    def fit(self, X: np.ndarray, y: np.ndarray, reg: float, seed: int) -> LogisticRegression:
        """Fit one model at ``reg``."""
        return self.path(X, y, [reg], seed)[reg]


def _kfold(k: int, y: np.ndarray, seed: int) -> StratifiedKFold:
    smallest = int(np.min(np.unique(y, return_counts=True)[1]))
    if k < 2:
        raise ValueError(f"k-fold needs k >= 2, got {k}")
    if smallest < k:
        raise DataError(f"a class has {smallest} examples, fewer than the {k} folds asked for")
    return StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)


def select_reg(
    X: np.ndarray,
    y: np.ndarray,
    k: int,
    seed: int = DEFAULT_SEED,
    regs: Sequence[float] = REG_GRID,
    fits: _Fits | None = None,
) -> tuple[float, float]:
    """Choose the L2 strength by stratified k-fold accuracy; return ``(reg, mean accuracy x100)``.

    Ties go to the earlier entry of ``regs`` (SentEval's ``np.argmax``).
    """
    fits = fits or _Fits()
    scores = np.zeros(len(regs))
    for tr, va in _kfold(k, y, seed).split(X, y):
        models = fits.path(X[tr], y[tr], regs, seed)
        scores += [models[r].score(X[va], y[va]) for r in regs]
    scores = 100.0 * scores / k
    best = int(np.argmax(scores))
    return float(regs[best]), float(scores[best])


def nested_cv_accuracy(
    X: np.ndarray,
    y: np.ndarray,
    kfold: int = 10,
    inner_kfold: int | None = None,
    seed: int = DEFAULT_SEED,
    regs: Sequence[float] = REG_GRID,
    fits: _Fits | None = None,
) -> dict[str, Any]:
    """SentEval's InnerKFoldClassifier: outer k-fold test accuracy with inner k-fold selection.

    Returns ``acc`` (mean outer test accuracy x100), ``dev_acc`` (mean best inner accuracy) and
    ``regs`` (the reg chosen in each outer fold). ``inner_kfold`` defaults to ``kfold``.
    """
    fits = fits or _Fits()
    inner = inner_kfold or kfold
    accs, devs, chosen = [], [], []
    for tr, te in _kfold(kfold, y, seed).split(X, y):
        reg, dev = select_reg(X[tr], y[tr], inner, seed, regs, fits)
        accs.append(100.0 * fits.fit(X[tr], y[tr], reg, seed).score(X[te], y[te]))
        devs.append(dev)
        chosen.append(reg)
    return {"acc": float(np.mean(accs)), "dev_acc": float(np.mean(devs)), "regs": chosen}


def kfold_test_accuracy(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    kfold: int = 10,
    seed: int = DEFAULT_SEED,
    regs: Sequence[float] = REG_GRID,
    fits: _Fits | None = None,
) -> dict[str, Any]:
    """SentEval's KFoldClassifier: select reg by k-fold on train, fit on train, score on test.

    Returns ``acc``, ``dev_acc`` (x100), ``regs`` (one entry) and ``y_pred`` (test predictions).
    """
    fits = fits or _Fits()
    reg, dev = select_reg(X_train, y_train, kfold, seed, regs, fits)
    model = fits.fit(X_train, y_train, reg, seed)
    y_pred = model.predict(X_test)
    return {"acc": 100.0 * float(np.mean(y_pred == y_test)), "dev_acc": dev, "regs": [reg], "y_pred": y_pred}


def split_test_accuracy(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_dev: np.ndarray,
    y_dev: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    seed: int = DEFAULT_SEED,
    regs: Sequence[float] = REG_GRID,
    fits: _Fits | None = None,
) -> dict[str, Any]:
    """SentEval's SplitClassifier: fit on train per reg, keep the best on dev, score it on test."""
    fits = fits or _Fits()
    models = fits.path(X_train, y_train, regs, seed)
    dev_scores = [100.0 * models[r].score(X_dev, y_dev) for r in regs]
    best = int(np.argmax(dev_scores))
    reg = float(regs[best])
    y_pred = models[reg].predict(X_test)
    return {
        "acc": 100.0 * float(np.mean(y_pred == y_test)),
        "dev_acc": dev_scores[best],
        "regs": [reg],
        "y_pred": y_pred,
    }


# --------------------------------------------------------------------------------------------------
# Tasks


@dataclass
class _TaskData:
    """Texts and labels of one task's splits; pair tasks keep (s1, s2) per row."""

    name: str
    splits: dict[str, tuple[list[Any], np.ndarray]]

    def texts(self) -> list[str]:
        """Every sentence of every split (both sentences of a pair)."""
        out: list[str] = []
        for rows, _ in self.splits.values():
            for r in rows:
                out.extend((r,) if isinstance(r, str) else r)
        return out


def _load_task(name: str, data_dir: Any) -> _TaskData:
    from sentsweep import data

    def sentences(split: str | None) -> tuple[list[Any], np.ndarray]:
        recs = data.labelled_sentences(name, split, data_dir=data_dir)
        return [r.text for r in recs], np.array([r.label for r in recs], dtype=np.int64)

    if name in CV_TASKS:
        return _TaskData(name, {"all": sentences(None)})
    if name == "trec":
        return _TaskData(name, {"train": sentences("train"), "test": sentences("test")})
    if name == "sst2":
        return _TaskData(name, {s: sentences(s) for s in ("train", "dev", "test")})
    if name == "mrpc":
        splits = {}
        for split in ("train", "test"):
            recs = data.labelled_pairs("mrpc", split, data_dir=data_dir)
            splits[split] = ([(r.s1, r.s2) for r in recs], np.array([r.label for r in recs], dtype=np.int64))
        return _TaskData(name, splits)
    raise ValueError(f"unknown SentEval task {name!r}; valid names: {', '.join(SENTEVAL_TASKS)}")


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
    kfold: int = 10,
    inner_kfold: int | None = None,
    seed: int = DEFAULT_SEED,
    *,
    optional: Collection[str] | None = None,
    regs: Sequence[float] = REG_GRID,
    mrpc_features: str = "full",
    max_iter: int = DEFAULT_MAX_ITER,
    tol: float = DEFAULT_TOL,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
) -> EvalResult:
    """Evaluate ``embedder`` on SentEval transfer tasks with logistic regression (see module docstring).

    ``tasks=None`` means all of :data:`SENTEVAL_TASKS`, each optional: a task whose data is absent is
    skipped with a note. Tasks named explicitly are required (absent data raises DataError) unless
    also listed in ``optional``. ``inner_kfold`` defaults to ``kfold`` (SentEval uses one k for both).
    ``mrpc_features`` is ``"full"`` (``[u, v, |u-v|, u*v]``) or ``"diff_prod"`` (``[|u-v|, u*v]``).

    Metrics (x100): ``<task>_acc`` per task, ``mrpc_f1``, and ``senteval_avg`` (mean accuracy of the
    tasks that ran). The table has one row per requested task: task, protocol, n_train, n_test, acc,
    dev_acc, f1, reg (selected L2; per outer fold for cross-validated tasks), fit_seconds (classifier
    wall time) and note; for the cross-validated tasks n_train and n_test are both the dataset size
    (each example is tested once).
    """
    if mrpc_features not in ("full", "diff_prod"):
        raise ValueError(f"mrpc_features must be 'full' or 'diff_prod', got {mrpc_features!r}")
    if tasks is None:
        names, optional_set = list(SENTEVAL_TASKS), set(SENTEVAL_TASKS)
    else:
        names = resolve_senteval_tasks(tasks)
        optional_set = set(resolve_senteval_tasks(list(optional))) if optional else set()
    inner = inner_kfold or kfold
    from sentsweep.data import resolve_data_dir

    source = resolve_data_dir(data_dir)

    loaded: dict[str, _TaskData] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            loaded[name] = _load_task(name, source)
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
            fits = _Fits(max_iter=max_iter, tol=tol)  # per task: a task's figures never depend on others
            started = time.perf_counter()
            rows[name] = _run_task(task, emb, row, kfold, inner, seed, regs, mrpc_features, fits)
            rows[name]["fit_seconds"] = round(time.perf_counter() - started, 2)
            n_fits += fits.total
            if fits.unconverged:
                rows[name]["note"] = f"{fits.unconverged} fit(s) reached max_iter={max_iter}"
            metrics[f"{name}_acc"] = rows[name]["acc"]
            if name == "mrpc":
                metrics["mrpc_f1"] = rows[name]["f1"]
        metrics["senteval_avg"] = float(np.mean([metrics[f"{n}_acc"] for n in loaded]))

    columns = ["task", "protocol", "n_train", "n_test", "acc", "dev_acc", "f1", "reg", "fit_seconds", "note"]
    table = pd.DataFrame([rows[n] for n in names], columns=columns)
    table[["n_train", "n_test"]] = table[["n_train", "n_test"]].astype("Int64")  # NA for skipped tasks
    info: dict[str, Any] = {
        "senteval_kfold": kfold,
        "senteval_inner_kfold": inner,
        "senteval_seed": seed,
        "senteval_regs": list(regs),
        "senteval_fits": n_fits,
        "senteval_tol": tol,
        "senteval_mrpc_features": mrpc_features,
    }
    info.update(data_root=str(source.root), data_is_sample=bool(source.is_sample))
    return EvalResult(metrics, table, info)


def _run_task(
    task: _TaskData,
    emb: np.ndarray,
    row: dict[str, int],
    kfold: int,
    inner: int,
    seed: int,
    regs: Sequence[float],
    mrpc_features: str,
    fits: _Fits,
) -> dict[str, Any]:
    """Featurise one task and run its protocol; returns the table row."""

    def features(split: str) -> tuple[np.ndarray, np.ndarray]:
        items, y = task.splits[split]
        if task.name == "mrpc":
            u = emb[[row[a] for a, _ in items]]
            v = emb[[row[b] for _, b in items]]
            return pair_features(u, v, include_uv=mrpc_features == "full").astype(np.float64), y
        return emb[[row[s] for s in items]].astype(np.float64), y

    if task.name in CV_TASKS:
        X, y = features("all")
        res = nested_cv_accuracy(X, y, kfold, inner, seed, regs, fits)
        protocol = f"{kfold}-fold cv, inner {inner}-fold selection"
        n_train, n_test = len(y), len(y)
    elif task.name == "sst2":
        (Xtr, ytr), (Xdv, ydv), (Xte, yte) = features("train"), features("dev"), features("test")
        res = split_test_accuracy(Xtr, ytr, Xdv, ydv, Xte, yte, seed, regs, fits)
        protocol = "train/dev/test, selection on dev"
        n_train, n_test = len(ytr), len(yte)
    else:
        (Xtr, ytr), (Xte, yte) = features("train"), features("test")
        res = kfold_test_accuracy(Xtr, ytr, Xte, yte, kfold, seed, regs, fits)
        protocol = f"train/test, {kfold}-fold selection on train"
        n_train, n_test = len(ytr), len(yte)
    out = {
        "task": task.name,
        "protocol": protocol,
        "n_train": n_train,
        "n_test": n_test,
        "acc": res["acc"],
        "dev_acc": res["dev_acc"],
        "f1": math.nan,
        "reg": _format_regs(res["regs"]),
        "note": "",
    }
    if task.name == "mrpc":
        out["f1"] = 100.0 * float(f1_score(yte, res["y_pred"], pos_label=1))
    return out


def _format_regs(regs: Sequence[float]) -> str:
    counts = Counter(regs)
    if len(counts) == 1:
        return f"{regs[0]:g}"
    return ", ".join(f"{r:g} x{c}" for r, c in sorted(counts.items()))
