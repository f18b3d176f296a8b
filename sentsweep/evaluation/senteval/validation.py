"""SentEval's three validation protocols (``senteval/tools/validation.py``), on any fit engine.

- :func:`inner_kfold_classifier` (MR, CR, SUBJ, MPQA): outer stratified k-fold; in each outer training
  part, each L2 value is scored by the mean accuracy of an inner stratified k-fold (each inner model
  early-stopped on its inner test fold); the best value (first on ties, after rounding to 2 decimals as
  SentEval does) is refit on the outer training part with 5% held out for early stopping, and scored
  on the outer test fold. Both fold splits use seed 1111 whatever the seed option, as SentEval's code.
- :func:`kfold_classifier` (TREC, MRPC): the same selection by k-fold on train (fold seed: the seed
  option), refit on all of train with 5% held out, scored on test.
- :func:`split_classifier` (SST2, SICK-E): one fit per L2 value on train, early-stopped and selected on
  dev; the selected fit is the refit (SentEval refits with the same seed and data, which gives the same
  model), scored on test.

The engine trains a list of :class:`~.batched.Fit` at once: :func:`~.batched.train_batched` (every
inner fold and L2 value of a task as one problem) or :func:`~.sequential.train_sequential` (the
toolkit's loop). Accuracies are x100, rounded to 2 decimals per fold as SentEval reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold
from torch import Tensor

from sentsweep.errors import DataError
from sentsweep.evaluation.senteval.batched import Fit, Fitted, train_batched
from sentsweep.evaluation.senteval.settings import (
    INNER_KFOLD_FOLD_SEED,
    REG_GRID,
    VALIDATION_SPLIT,
    ClassifierSetting,
)

#: ``engine(X, y, fits, nclasses, setting, seed)``: trains the fits, returns their best weights.
Engine = Callable[[Tensor, Tensor, Sequence[Fit], int, ClassifierSetting, int], Fitted]


@dataclass
class Outcome:
    """A protocol's figures: test and selection accuracy (x100), the L2 chosen (per outer fold for the
    cross-validated tasks), test predictions (train/test tasks) and the epochs each fit trained."""

    acc: float
    dev_acc: float
    regs: list[float]
    y_pred: np.ndarray | None = None
    epochs: list[int] = field(default_factory=list)


def stratified_kfold(k: int, y: np.ndarray, seed: int) -> StratifiedKFold:
    """Shuffled stratified k-fold (SentEval's splitter), after checking every class has ``k`` examples."""
    if k < 2:
        raise ValueError(f"k-fold needs k >= 2, got {k}")
    smallest = int(np.min(np.unique(y, return_counts=True)[1]))
    if smallest < k:
        raise DataError(f"a class has {smallest} examples, fewer than the {k} folds asked for")
    return StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)


def validation_split_fit(rows: np.ndarray, reg: float, seed: int) -> Fit:
    """SentEval's ``fit(..., validation_split=0.05)``: the first draw of the fit's RNG permutes ``rows``;
    the first 5% are the early-stopping set, the rest (in that order) the training set."""
    n = len(rows)
    permutation = np.random.RandomState(seed).permutation(n)
    cut = int(VALIDATION_SPLIT * n)
    return Fit(rows[permutation[cut:]], rows[permutation[:cut]], reg, rng_prefix=(n,))


def _percent(accuracy: float) -> float:
    """``round(100 * accuracy, 2)``, as SentEval reports an accuracy."""
    return float(round(100 * accuracy, 2))


def _mean2(values: Sequence[float]) -> float:
    """``round(np.mean(values), 2)``, as SentEval averages its per-fold figures."""
    return float(round(np.mean(values), 2))


def _accuracy(fitted: Fitted, model: int, X: Tensor, y: np.ndarray) -> tuple[float, np.ndarray]:
    predicted = fitted.predict(X, model)
    return float(np.mean(predicted == y)), predicted


def _select(scores: list[float]) -> int:
    """The index of the best score, the first on ties (``np.argmax``)."""
    return int(np.argmax(scores))


def inner_kfold_classifier(X: Tensor, y: np.ndarray, nclasses: int, setting: ClassifierSetting, *, kfold: int,
                           inner_kfold: int, seed: int, regs: Sequence[float] = REG_GRID,
                           engine: Engine = train_batched) -> Outcome:
    """SentEval's InnerKFoldClassifier; all inner fits of all outer folds are one call of ``engine``."""
    yt = torch.from_numpy(y)
    outer = list(stratified_kfold(kfold, y, INNER_KFOLD_FOLD_SEED).split(np.zeros(len(y)), y))
    fits: list[Fit] = []
    for train, _ in outer:
        inner = list(stratified_kfold(inner_kfold, y[train], INNER_KFOLD_FOLD_SEED).split(train, y[train]))
        fits += [Fit(train[a], train[b], reg) for reg in regs for a, b in inner]
    fitted = engine(X, yt, fits, nclasses, setting, seed)
    dev_acc = fitted.dev_accuracy().reshape(len(outer), len(regs), inner_kfold)
    chosen, dev_results = [], []
    for o in range(len(outer)):
        scores = [_percent(np.mean(dev_acc[o, r])) for r in range(len(regs))]
        best = _select(scores)
        chosen.append(float(regs[best]))
        dev_results.append(scores[best])
    refits = engine(X, yt, [validation_split_fit(train, reg, seed) for (train, _), reg in zip(outer, chosen,
                                                                                             strict=True)],
                    nclasses, setting, seed)
    tests = [_percent(_accuracy(refits, o, X[torch.from_numpy(test)], y[test])[0])
             for o, (_, test) in enumerate(outer)]
    return Outcome(_mean2(tests), _mean2(dev_results), chosen,
                   epochs=[*fitted.epochs.tolist(), *refits.epochs.tolist()])


def kfold_classifier(X_train: Tensor, y_train: np.ndarray, X_test: Tensor, y_test: np.ndarray, nclasses: int,
                     setting: ClassifierSetting, *, kfold: int, seed: int, regs: Sequence[float] = REG_GRID,
                     engine: Engine = train_batched) -> Outcome:
    """SentEval's KFoldClassifier: L2 chosen by k-fold on train, refit on train (5% held out), test."""
    yt = torch.from_numpy(y_train)
    folds = list(stratified_kfold(kfold, y_train, seed).split(np.zeros(len(y_train)), y_train))
    fitted = engine(X_train, yt, [Fit(a, b, reg) for reg in regs for a, b in folds], nclasses, setting, seed)
    scores = [_percent(s) for s in fitted.dev_accuracy().reshape(len(regs), kfold).mean(axis=1)]
    best = _select(scores)
    reg, dev = float(regs[best]), scores[best]
    refit = engine(X_train, yt, [validation_split_fit(np.arange(len(y_train)), reg, seed)], nclasses, setting,
                   seed)
    accuracy, predicted = _accuracy(refit, 0, X_test, y_test)
    return Outcome(_percent(accuracy), dev, [reg], predicted, [*fitted.epochs.tolist(), *refit.epochs.tolist()])


def split_classifier(X_train: Tensor, y_train: np.ndarray, X_dev: Tensor, y_dev: np.ndarray, X_test: Tensor,
                     y_test: np.ndarray, nclasses: int, setting: ClassifierSetting, *, seed: int,
                     regs: Sequence[float] = REG_GRID, engine: Engine = train_batched) -> Outcome:
    """SentEval's SplitClassifier: one fit per L2 value early-stopped on dev, the best on dev scored on test."""
    n_train = len(y_train)
    X = torch.cat([X_train, X_dev])
    y = torch.from_numpy(np.concatenate([y_train, y_dev]))
    dev_rows = np.arange(n_train, n_train + len(y_dev))
    fitted = engine(X, y, [Fit(np.arange(n_train), dev_rows, reg) for reg in regs], nclasses, setting, seed)
    scores = [_percent(a) for a in fitted.dev_accuracy()]
    best = _select(scores)
    accuracy, predicted = _accuracy(fitted, best, X_test, y_test)
    return Outcome(_percent(accuracy), scores[best], [float(regs[best])], predicted, fitted.epochs.tolist())
