"""SentEval's classifier: the batched fits give the toolkit's sequential loop's figures; its seeding,
validation split, early stopping, settings and the relatedness target."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sentsweep.evaluation.senteval import CLASSIFIER_SETTINGS, SENTEVAL_OPTION_FIELDS, SentEvalOptions
from sentsweep.evaluation.senteval.batched import Fit, train_batched
from sentsweep.evaluation.senteval.relatedness import encode_labels, relatedness_regression
from sentsweep.evaluation.senteval.sequential import train_sequential
from sentsweep.evaluation.senteval.validation import (
    inner_kfold_classifier,
    kfold_classifier,
    split_classifier,
    validation_split_fit,
)


def _task(n: int = 240, d: int = 12, classes: int = 3, seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """A noisy linear problem: not separable, so early stopping and the L2 value matter."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=(d, classes)) + 1.5 * rng.normal(size=(n, classes))).argmax(axis=1)
    return torch.tensor(X, dtype=torch.float32), y


@pytest.mark.parametrize("setting", ["test", "fast"])
def test_batched_fits_equal_the_sequential_toolkit_loop(setting: str) -> None:
    """Different training sizes (ragged last batches, a model skipping a step), a validation split, and
    every L2 value: the same dev counts, the same epochs and the same weights to float rounding."""
    X, y = _task()
    config = dataclasses.replace(CLASSIFIER_SETTINGS[setting], max_epoch=40)
    perm = np.random.default_rng(1).permutation(len(y))
    fits = [Fit(perm[: 150 + 9 * k], perm[150 + 9 * k :], reg) for k, reg in enumerate((1e-5, 1e-4, 1e-3, 1e-2))]
    fits.append(validation_split_fit(np.arange(200), 1e-3, seed=1111))
    batched = train_batched(X, torch.from_numpy(y), fits, 3, config, seed=1111)
    sequential = train_sequential(X, torch.from_numpy(y), fits, 3, config, seed=1111)
    np.testing.assert_array_equal(batched.dev_correct, sequential.dev_correct)
    np.testing.assert_array_equal(batched.epochs, sequential.epochs)
    torch.testing.assert_close(batched.weight, sequential.weight, atol=1e-5, rtol=1e-4)


def test_protocols_give_the_same_figures_on_either_engine() -> None:
    X, y = _task(n=180, classes=2)
    setting = dataclasses.replace(CLASSIFIER_SETTINGS["test"], max_epoch=24)
    kw = {"kfold": 3, "inner_kfold": 2, "seed": 1111}
    a = inner_kfold_classifier(X, y, 2, setting, **kw)
    b = inner_kfold_classifier(X, y, 2, setting, **kw, engine=train_sequential)
    assert (a.acc, a.dev_acc, a.regs, a.epochs) == (b.acc, b.dev_acc, b.regs, b.epochs)
    Xt, yt = X[:60], y[:60]
    a = kfold_classifier(X[60:], y[60:], Xt, yt, 2, setting, kfold=3, seed=1111)
    b = kfold_classifier(X[60:], y[60:], Xt, yt, 2, setting, kfold=3, seed=1111, engine=train_sequential)
    assert (a.acc, a.dev_acc, a.regs) == (b.acc, b.dev_acc, b.regs)
    np.testing.assert_array_equal(a.y_pred, b.y_pred)
    a = split_classifier(X[90:], y[90:], X[60:90], y[60:90], Xt, yt, 2, setting, seed=1111)
    b = split_classifier(X[90:], y[90:], X[60:90], y[60:90], Xt, yt, 2, setting, seed=1111, engine=train_sequential)
    assert (a.acc, a.dev_acc, a.regs) == (b.acc, b.dev_acc, b.regs)


def test_validation_split_is_the_first_draw_of_the_fits_rng() -> None:
    rows = np.arange(100, 140)
    fit = validation_split_fit(rows, 1e-4, seed=1111)
    np.random.seed(1111)  # the toolkit: np.random.seed(seed) in the constructor, then permutation(len(X))
    permutation = np.random.permutation(40)
    np.testing.assert_array_equal(fit.dev, rows[permutation[:2]])
    np.testing.assert_array_equal(fit.train, rows[permutation[2:]])
    assert fit.rng_prefix == (40,)


def test_early_stopping_counts_misses_cumulatively() -> None:
    """SentEval never resets its miss count: with nothing to learn (random labels, a dev set of 1), the
    fit stops at the (tenacity + 1)-th check without improvement."""
    X, y = _task(n=40, classes=2)
    setting = CLASSIFIER_SETTINGS["fast"]  # tenacity 3, epoch_size 2
    fitted = train_batched(X, torch.from_numpy(y), [Fit(np.arange(39), np.array([39]), 1e-5)], 2, setting, 1111)
    # check 1 improves on -1; every later one cannot beat a perfect or equal count except once (0 -> 1)
    assert fitted.epochs[0] in (2 * (1 + setting.tenacity + 1), 2 * (2 + setting.tenacity + 1))


def test_settings_are_simcse_test_and_fast() -> None:
    test, fast = CLASSIFIER_SETTINGS["test"], CLASSIFIER_SETTINGS["fast"]
    assert (test.solver, test.kfold, test.batch_size, test.tenacity, test.epoch_size) == ("adam", 10, 64, 5, 4)
    assert (fast.solver, fast.kfold, fast.batch_size, fast.tenacity, fast.epoch_size) == ("rmsprop", 5, 128, 3, 2)
    assert test.max_epoch == fast.max_epoch == 200 and not CLASSIFIER_SETTINGS["lbfgs"].is_toolkit
    assert SentEvalOptions().folds == 10 and SentEvalOptions(setting="fast").inner_folds == 5
    assert SENTEVAL_OPTION_FIELDS == {"senteval_setting": "setting", "senteval_kfold": "kfold",
                                      "senteval_inner_kfold": "inner_kfold", "senteval_seed": "seed",
                                      "senteval_mrpc_features": "mrpc_features"}
    with pytest.raises(ValueError, match="kfold must be >= 2"):
        SentEvalOptions(kfold=1)


def test_relatedness_target_is_tai_et_al() -> None:
    np.testing.assert_allclose(encode_labels(np.array([3.6, 1.0, 5.0])),
                               [[0, 0, 0.4, 0.6, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]], atol=1e-6)


def test_a_constant_dev_prediction_counts_zero_as_in_the_toolkit() -> None:
    """SentEval sets a NaN dev correlation (constant predictions) to 0, which beats the start (-1): the model after
    the first check is kept, not the untrained one."""
    rng = np.random.default_rng(0)
    X = torch.tensor(rng.normal(size=(200, 4)), dtype=torch.float32)
    y = np.clip(3.0 + X[:, 0].numpy(), 1.0, 5.0)
    result = relatedness_regression(X, y, torch.zeros(50, 4), y[:50], X, y, seed=1111)
    assert result.dev_pearson == 0.0 and result.epochs == 250  # 0 at every check: 4 more checks without a gain
    assert result.pearson > 80.0  # the model trained for 50 epochs, not the initial one
