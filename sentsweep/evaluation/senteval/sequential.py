"""SentEval's classifier loop as the toolkit runs it: one ``nn.Linear`` at a time, ``torch.optim``.

The reference :func:`~sentsweep.evaluation.senteval.batched.train_batched` is checked against (same
fits, same seed, same figures) and the baseline of ``bench/senteval.py``. It follows
``PyTorchClassifier.fit`` / ``trainepoch`` / ``score`` of ``senteval/tools/classifier.py`` line by line,
with the autograd loss and PyTorch's own Adam and RMSprop; only the global seeding is replaced by a
private ``RandomState`` and a forked torch RNG (the same numbers, no side effect on the caller). Its
operations are tiny, so it runs on one thread (more only adds synchronisation).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from sentsweep.evaluation.senteval.batched import ADAM, RMSPROP, Fit, Fitted, initial_layer, one_thread
from sentsweep.evaluation.senteval.settings import ClassifierSetting


def _optimizer(solver: str, params: list[Tensor], reg: float) -> torch.optim.Optimizer:
    if solver == "adam":
        return torch.optim.Adam(params, lr=ADAM["lr"], betas=(ADAM["beta1"], ADAM["beta2"]), eps=ADAM["eps"],
                                weight_decay=reg, foreach=False)
    if solver == "rmsprop":
        return torch.optim.RMSprop(params, lr=RMSPROP["lr"], alpha=RMSPROP["alpha"], eps=RMSPROP["eps"],
                                   weight_decay=reg, foreach=False)
    raise ValueError(f"no toolkit optimizer {solver!r}")


def fit_one(X: Tensor, y: Tensor, fit: Fit, nclasses: int, setting: ClassifierSetting,
            seed: int) -> tuple[nn.Linear, int, int]:
    """One fit as ``MLP.fit``: returns the best model, its correct count on ``fit.dev`` and the epochs run."""
    weight, bias = initial_layer(X.shape[1], nclasses, seed, X.dtype)
    model = nn.Linear(X.shape[1], nclasses).to(X.dtype)
    with torch.no_grad():
        model.weight.copy_(weight)
        model.bias.copy_(bias)
    optimizer = _optimizer(setting.solver, list(model.parameters()), fit.reg)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.RandomState(seed)
    for size in fit.rng_prefix:
        rng.permutation(size)
    train_x, train_y = X[torch.from_numpy(fit.train)], y[torch.from_numpy(fit.train)]
    dev_x, dev_y = X[torch.from_numpy(fit.dev)], y[torch.from_numpy(fit.dev)]
    nepoch, best, misses, stop = 0, -1, 0, False
    best_model = model
    while not stop and nepoch <= setting.max_epoch:
        model.train()
        for _ in range(setting.epoch_size):
            permutation = rng.permutation(len(train_x))
            for i in range(0, len(train_x), setting.batch_size):
                idx = torch.from_numpy(permutation[i : i + setting.batch_size])
                loss = loss_fn(model(train_x.index_select(0, idx)), train_y.index_select(0, idx))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        nepoch += setting.epoch_size
        model.eval()
        with torch.no_grad():
            correct = int((model(dev_x).argmax(dim=1) == dev_y).sum())
        if correct > best:
            best, best_model = correct, copy.deepcopy(model)
        else:
            if misses >= setting.tenacity:
                stop = True
            misses += 1
    return best_model, best, nepoch


def train_sequential(X: Tensor, y: Tensor, fits: Sequence[Fit], nclasses: int, setting: ClassifierSetting,
                     seed: int) -> Fitted:
    """Every fit of ``fits``, one after the other, as the toolkit; the result as :func:`train_batched`'s."""
    weights, biases, correct, epochs = [], [], [], []
    for fit in fits:
        with one_thread():
            model, best, nepoch = fit_one(X, y, fit, nclasses, setting, seed)
        weights.append(model.weight.detach())
        biases.append(model.bias.detach())
        correct.append(best)
        epochs.append(nepoch)
    return Fitted(torch.stack(weights), torch.stack(biases), np.array(correct),
                  np.array([len(f.dev) for f in fits]), np.array(epochs))
