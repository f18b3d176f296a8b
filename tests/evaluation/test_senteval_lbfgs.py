"""The exact solver (setting ``lbfgs``): the reg -> C mapping, pair features, its three protocols."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from sentsweep.errors import DataError
from sentsweep.evaluation import (
    REG_GRID,
    kfold_test_accuracy,
    nested_cv_accuracy,
    pair_features,
    reg_to_c,
    select_reg,
    split_test_accuracy,
)


def test_reg_to_c_matches_weight_decay_on_the_mean_loss() -> None:
    """At sklearn's optimum with C = 1/(reg n), the gradient of mean loss + reg/2 ||w||^2 vanishes."""
    rng = np.random.default_rng(0)
    n, d, reg = 300, 5, 1e-2
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(int)
    model = LogisticRegression(C=reg_to_c(reg, n), tol=1e-12, max_iter=10_000).fit(X, y)
    w, b = model.coef_[0], model.intercept_[0]
    p = 1 / (1 + np.exp(-(X @ w + b)))
    grad_w = X.T @ (p - y) / n + reg * w
    grad_b = np.mean(p - y)  # the intercept is not penalised
    assert np.abs(grad_w).max() < 1e-6 and abs(grad_b) < 1e-6
    assert reg_to_c(1e-3, 500) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        reg_to_c(0.0, 10)


def test_pair_features_layout() -> None:
    u = np.array([[1.0, -2.0], [0.5, 0.0]])
    v = np.array([[3.0, 1.0], [0.5, 2.0]])
    full = pair_features(u, v, include_uv=True)
    assert full.dtype == np.float32 and full.shape == (2, 8)
    np.testing.assert_allclose(full[0], [1, -2, 3, 1, 2, 3, 3, -2])
    np.testing.assert_allclose(full[1], [0.5, 0, 0.5, 2, 0, 2, 0.25, 0])
    np.testing.assert_allclose(pair_features(u, v), full[:, 4:])  # SentEval's [|u-v|, u*v] by default
    with pytest.raises(ValueError):
        pair_features(u, v[:1])


def test_nested_cv_on_separable_toy_embeddings(embedder, polarity) -> None:
    texts, y = polarity(120)
    X = embedder.encode(texts).astype(np.float64)
    res = nested_cv_accuracy(X, y, kfold=3, inner_kfold=2, seed=1)
    assert res["acc"] > 95 and res["dev_acc"] > 90
    assert len(res["regs"]) == 3 and set(res["regs"]) <= set(REG_GRID)
    # deterministic given the seed
    assert nested_cv_accuracy(X, y, kfold=3, inner_kfold=2, seed=1) == res


def test_select_reg_ties_go_to_the_first_grid_entry() -> None:
    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    X = np.c_[(2 * y - 1) * 5.0, rng.normal(size=(60, 3))]  # separable by a wide margin at every reg
    reg, acc = select_reg(X, y, k=3, regs=(1e-4, 1e-5))
    assert (reg, acc) == (1e-4, pytest.approx(100.0))


def test_kfold_and_split_protocols_multiclass() -> None:
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, 8)) * 3
    y = np.repeat(np.arange(3), 40)
    X = centres[y] + rng.normal(size=(120, 8))
    tr, te = np.arange(120) % 4 != 0, np.arange(120) % 4 == 0
    res = kfold_test_accuracy(X[tr], y[tr], X[te], y[te], kfold=3)
    assert res["acc"] > 90 and res["y_pred"].shape == (30,)
    dv = np.arange(120) % 4 == 1
    tr2 = tr & ~dv
    res = split_test_accuracy(X[tr2], y[tr2], X[dv], y[dv], X[te], y[te])
    assert res["acc"] > 90 and len(res["regs"]) == 1


def test_too_many_folds_for_a_class_is_a_data_error() -> None:
    X = np.eye(6)
    y = np.array([0, 0, 0, 0, 0, 1])
    with pytest.raises(DataError, match="fewer than the 3 folds"):
        select_reg(X, y, k=3)
