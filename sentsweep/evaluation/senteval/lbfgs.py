"""The exact solver (setting ``lbfgs``): scikit-learn's L-BFGS logistic regression on SentEval's folds.

Not SentEval's classifier: SentEval trains its logistic regression with Adam and early stopping
(settings ``test`` and ``fast``); this solves the same convex problem exactly, which moves figures by up
to ~3 points depending on the embedding. It is kept as a named, non-default option because it is
deterministic and independent of batch order.

The L2 grid is SentEval's PyTorch grid, ``{1e-5, 1e-4, 1e-3, 1e-2}``, used there as Adam's weight decay
on the *mean* cross-entropy. Weight decay ``reg`` on the mean loss is the penalty ``reg/2 * ||w||^2``,
and ``mean_loss + reg/2 ||w||^2`` has the same minimiser as scikit-learn's ``C * sum_loss + 1/2 ||w||^2``
with ``C = 1 / (reg * n_train)`` (see :func:`reg_to_c`); ``n_train`` is the size of the set that one fit
sees. The intercept is not penalised, and a refit uses the whole training part (no early-stopping
split is needed). Protocols as SentEval's: nested k-fold for MR, CR, SUBJ, MPQA, k-fold selection on
train for TREC and MRPC, dev selection for SST2 and SICK-E.

Cost: ``kfold * (inner_kfold * 4 + 1)`` fits per cross-validated task (410 at the default 10/10) and
``4 * kfold + 1`` for TREC and MRPC.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from sentsweep.evaluation.senteval.settings import DEFAULT_SEED, REG_GRID
from sentsweep.evaluation.senteval.validation import stratified_kfold

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


@dataclass
class LbfgsFits:
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


def select_reg(
    X: np.ndarray,
    y: np.ndarray,
    k: int,
    seed: int = DEFAULT_SEED,
    regs: Sequence[float] = REG_GRID,
    fits: LbfgsFits | None = None,
) -> tuple[float, float]:
    """Choose the L2 strength by stratified k-fold accuracy; return ``(reg, mean accuracy x100)``.

    Ties go to the earlier entry of ``regs`` (SentEval's ``np.argmax``).
    """
    fits = fits or LbfgsFits()
    scores = np.zeros(len(regs))
    for tr, va in stratified_kfold(k, y, seed).split(X, y):
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
    fits: LbfgsFits | None = None,
) -> dict[str, Any]:
    """SentEval's InnerKFoldClassifier: outer k-fold test accuracy with inner k-fold selection.

    Returns ``acc`` (mean outer test accuracy x100), ``dev_acc`` (mean best inner accuracy) and
    ``regs`` (the reg chosen in each outer fold). ``inner_kfold`` defaults to ``kfold``.
    """
    fits = fits or LbfgsFits()
    inner = inner_kfold or kfold
    accs, devs, chosen = [], [], []
    for tr, te in stratified_kfold(kfold, y, seed).split(X, y):
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
    fits: LbfgsFits | None = None,
) -> dict[str, Any]:
    """SentEval's KFoldClassifier: select reg by k-fold on train, fit on train, score on test.

    Returns ``acc``, ``dev_acc`` (x100), ``regs`` (one entry) and ``y_pred`` (test predictions).
    """
    fits = fits or LbfgsFits()
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
    fits: LbfgsFits | None = None,
) -> dict[str, Any]:
    """SentEval's SplitClassifier: fit on train per reg, keep the best on dev, score it on test."""
    fits = fits or LbfgsFits()
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
