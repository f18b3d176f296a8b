"""SICK-R, supervised, as SentEval's ``RelatednessPytorch`` (``senteval/tools/relatedness.py``).

Features ``[|u - v|, u * v]``; the gold score ``y`` in [1, 5] becomes a distribution over the five
integers (Tai et al., 2015, eq. in section 4.2; :func:`encode_labels`); the regressor is
``softmax(W x + b)`` trained with mean squared error against that distribution, Adam (PyTorch's defaults,
no weight decay), batches of 64, 50 epochs between checks of the dev Pearson correlation of the
predicted score ``p . [1, 2, 3, 4, 5]`` (a NaN correlation counts 0), the best model kept, stopping after 4
checks without improvement in all (or 1000 epochs). The criterion is Facebook's toolkit's (Pearson), the one the
multi-view paper's SICK-R r (Table 1) came from; SimCSE's copy of the toolkit checks the dev Spearman instead (the
same stopping epoch and test figures for all-MiniLM-L6-v2). Reported on test: Pearson and
Spearman x100 and the MSE of the predicted score (raw, in squared score units). Seeded as the toolkit
(``torch.manual_seed`` and ``np.random.seed`` with the seed), through a private RandomState and a forked torch RNG.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from torch import Tensor, nn

from sentsweep.evaluation.senteval.batched import one_thread

#: The toolkit's constants: batch size, epochs between dev checks, the check budget and the epoch cap.
BATCH_SIZE = 64
EPOCHS_PER_CHECK = 50
TENACITY = 3
MAX_EPOCH = 1000
NCLASSES = 5


def encode_labels(scores: np.ndarray, nclass: int = NCLASSES) -> np.ndarray:
    """Tai et al.'s sparse target: ``y`` puts ``y - floor(y)`` on ``floor(y) + 1`` and
    ``floor(y) - y + 1`` on ``floor(y)`` (classes 1..nclass, column ``i`` is class ``i + 1``)."""
    scores = np.asarray(scores, dtype=np.float64)
    out = np.zeros((len(scores), nclass), dtype=np.float32)
    floor = np.floor(scores)
    for i in range(nclass):
        out[:, i] = np.where(i + 1 == floor + 1, scores - floor, out[:, i])
        out[:, i] = np.where(i + 1 == floor, floor - scores + 1, out[:, i])
    return out


@dataclass
class Relatedness:
    """Test figures (Pearson and Spearman x100, MSE) and the best dev Pearson (x100)."""

    pearson: float
    spearman: float
    mse: float
    dev_pearson: float
    epochs: int
    predicted: np.ndarray


def _expected_score(model: nn.Module, X: Tensor) -> np.ndarray:
    model.eval()
    with torch.no_grad():
        probs = torch.cat([model(X[i : i + BATCH_SIZE]) for i in range(0, len(X), BATCH_SIZE)])
    return probs.numpy() @ np.arange(1, NCLASSES + 1)


def relatedness_regression(X_train: Tensor, y_train: np.ndarray, X_dev: Tensor, y_dev: np.ndarray, X_test: Tensor,
                           y_test: np.ndarray, seed: int) -> Relatedness:
    """Train SentEval's relatedness regressor on ``X_train`` (gold scores ``y_train``), select on dev."""
    with one_thread():
        return _regression(X_train, y_train, X_dev, y_dev, X_test, y_test, seed)


def _regression(X_train: Tensor, y_train: np.ndarray, X_dev: Tensor, y_dev: np.ndarray, X_test: Tensor,
                y_test: np.ndarray, seed: int) -> Relatedness:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(X_train.shape[1], NCLASSES), nn.Softmax(dim=1)).to(X_train.dtype)
    rng = np.random.RandomState(seed)
    optimizer = torch.optim.Adam(model.parameters(), weight_decay=0.0, foreach=False)
    loss_fn = nn.MSELoss()
    target = torch.from_numpy(encode_labels(y_train)).to(X_train.dtype)
    nepoch, best, misses, stop = 0, -1.0, 0, False
    best_model = model
    while not stop and nepoch <= MAX_EPOCH:
        model.train()
        for _ in range(EPOCHS_PER_CHECK):
            permutation = rng.permutation(len(X_train))
            for i in range(0, len(X_train), BATCH_SIZE):
                idx = torch.from_numpy(permutation[i : i + BATCH_SIZE])
                loss = loss_fn(model(X_train[idx]), target[idx])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        nepoch += EPOCHS_PER_CHECK
        dev = float(pearsonr(_expected_score(model, X_dev), y_dev)[0])
        dev = 0.0 if dev != dev else dev  # as the toolkit: a constant prediction (NaN) scores 0, beating the start
        if dev > best:
            best, best_model = dev, copy.deepcopy(model)
        else:
            if misses >= TENACITY:
                stop = True
            misses += 1
    predicted = _expected_score(best_model, X_test)
    pearson = float(pearsonr(predicted, y_test)[0])
    rho = float(spearmanr(predicted, y_test)[0])
    return Relatedness(
        pearson=100 * (0.0 if pearson != pearson else pearson),
        spearman=100 * (0.0 if rho != rho else rho),
        mse=float(np.mean((predicted - y_test) ** 2)),
        dev_pearson=100 * best,
        epochs=nepoch,
        predicted=predicted,
    )
