"""SentEval's logistic-regression fit, many models at once: one batched problem, each model as the toolkit.

SentEval (``senteval/tools/classifier.py``, ``PyTorchClassifier.fit`` with ``nhid`` 0) trains one
``nn.Linear(dim, nclasses)`` at a time: seeded with ``torch.manual_seed(seed)`` and
``np.random.seed(seed)``; each "step" runs ``epoch_size`` epochs, each epoch a fresh
``np.random.permutation`` of the training rows cut into batches of ``batch_size`` (the last one
smaller), mean cross-entropy, the optimizer's ``weight_decay`` = the L2 strength on every parameter;
after each step the accuracy on the early-stopping set; the best model is kept; training stops once
the accuracy has failed to improve more than ``tenacity`` times in all (the count is never reset) or
after ``max_epoch`` epochs.

:func:`train_batched` runs M such fits as one problem: weights ``[M, C, dim]``, batches gathered per
model and multiplied with ``bmm``, the optimizer (Adam or RMSprop, written out as PyTorch's
single-tensor implementations compute them) applied per model. Each model keeps its own batch order
(its own ``RandomState(seed)`` stream: models with the same training size and the same draws before
training share one), its own step count and its own early stopping; a model whose epoch has fewer
batches skips the steps it does not have, and a stopped model leaves the problem. So each model goes
through exactly the updates the toolkit's sequential loop makes (:mod:`.sequential` is that loop, and
the tests compare the two); the batched arithmetic rounds differently in the last bits only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from sentsweep.evaluation.senteval.settings import ClassifierSetting

#: Elements of one gathered evaluation block (models x rows x dim); bounds the memory of scoring.
_EVAL_BLOCK = 1 << 23
#: PyTorch's defaults, which SentEval keeps (``utils.get_optimizer("adam")`` / ``("rmsprop")``).
ADAM = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
RMSPROP = {"lr": 1e-2, "alpha": 0.99, "eps": 1e-8}


@dataclass(frozen=True)
class Fit:
    """One classifier fit as SentEval's ``MLP.fit`` runs it.

    ``train`` are the rows of the feature matrix in the order of the toolkit's ``trainX``; ``dev`` the
    rows of its early-stopping set; ``reg`` the L2 strength; ``rng_prefix`` the lengths of the
    permutations the fit's RNG drew before training (``(n,)`` after a ``validation_split``).
    """

    train: np.ndarray
    dev: np.ndarray
    reg: float
    rng_prefix: tuple[int, ...] = ()


@dataclass
class Fitted:
    """The best weights of each fit (``[M, C, dim]``, ``[M, C]``), their dev counts and epochs trained."""

    weight: Tensor
    bias: Tensor
    dev_correct: np.ndarray
    dev_size: np.ndarray
    epochs: np.ndarray

    def dev_accuracy(self) -> np.ndarray:
        """Each fit's best accuracy on its early-stopping set (SentEval's ``bestaccuracy``)."""
        return self.dev_correct / np.maximum(self.dev_size, 1)

    def predict(self, X: Tensor, model: int) -> np.ndarray:
        """Class predictions of fit ``model`` for the rows of ``X``."""
        logits = X.to(self.weight.dtype) @ self.weight[model].T + self.bias[model]
        return logits.argmax(dim=1).numpy()


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """PyTorch on one intra-op thread inside the block (the toolkit-style loops run tiny operations, where
    more threads only synchronise; measured 4x slower with two on a busy 2-core machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def initial_layer(dim: int, nclasses: int, seed: int, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """The toolkit's initial ``nn.Linear(dim, nclasses)`` after ``torch.manual_seed(seed)`` (the caller's
    RNG state is left untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = nn.Linear(dim, nclasses)
    return layer.weight.detach().to(dtype), layer.bias.detach().to(dtype)


@dataclass
class _Streams:
    """The batch orders: ``RandomState(seed)`` after the prefix draws, one permutation per epoch, shared by
    the fits with the same (prefix, training size)."""

    seed: int
    states: dict[tuple[tuple[int, ...], int], tuple[np.random.RandomState, int, np.ndarray]] = field(
        default_factory=dict)

    def permutation(self, prefix: tuple[int, ...], n: int, epoch: int) -> np.ndarray:
        key = (prefix, n)
        if key not in self.states:
            rs = np.random.RandomState(self.seed)
            for size in prefix:
                rs.permutation(size)
            self.states[key] = (rs, -1, np.empty(0, dtype=np.int64))
        rs, at, perm = self.states[key]
        while at < epoch:
            perm, at = rs.permutation(n), at + 1
        self.states[key] = (rs, at, perm)
        return perm


class _Optimizer:
    """Adam or RMSprop over the live models' weights, per model (its own weight decay and step count)."""

    def __init__(self, solver: str, weight: Tensor, bias: Tensor, reg: Tensor) -> None:
        if solver not in ("adam", "rmsprop"):
            raise ValueError(f"no batched optimizer {solver!r}")
        self.solver = solver
        self.reg = reg
        self.steps = np.zeros(weight.shape[0], dtype=np.int64)
        self.state = [torch.zeros_like(weight), torch.zeros_like(bias)]
        if solver == "adam":
            self.state += [torch.zeros_like(weight), torch.zeros_like(bias)]

    def keep(self, rows: Tensor) -> None:
        """Drop the models not in ``rows`` (stopped)."""
        self.reg = self.reg[rows]
        self.steps = self.steps[rows.numpy()]
        self.state = [s[rows] for s in self.state]

    def step(self, params: list[Tensor], grads: list[Tensor], rows: Tensor | None) -> None:
        """One update of the models ``rows`` (all when None); ``params`` are updated in place."""
        if rows is None:
            self._update(params, grads, self.state, self.reg, self.steps)
            return
        sub_params = [p[rows] for p in params]
        sub_state = [s[rows] for s in self.state]
        picked = rows.numpy()
        sub_steps = self.steps[picked]
        self._update(sub_params, [g[rows] for g in grads], sub_state, self.reg[rows], sub_steps)
        self.steps[picked] = sub_steps
        for full, part in zip(params + self.state, sub_params + sub_state, strict=True):
            full.index_copy_(0, rows, part)

    def _update(self, params: list[Tensor], grads: list[Tensor], state: list[Tensor], reg: Tensor,
                steps: np.ndarray) -> None:
        steps += 1
        for i, (p, g) in enumerate(zip(params, grads, strict=True)):
            decay = reg.view(-1, *([1] * (p.dim() - 1)))
            g = g + decay * p
            if self.solver == "rmsprop":
                square = state[i]
                square.mul_(RMSPROP["alpha"]).addcmul_(g, g, value=1 - RMSPROP["alpha"])
                p.addcdiv_(g, square.sqrt().add_(RMSPROP["eps"]), value=-RMSPROP["lr"])
                continue
            avg, square = state[i], state[i + 2]
            avg.lerp_(g, 1 - ADAM["beta1"])
            square.mul_(ADAM["beta2"]).addcmul_(g, g, value=1 - ADAM["beta2"])
            correction1 = 1 - ADAM["beta1"] ** steps.astype(np.float64)
            correction2_sqrt = np.sqrt(1 - ADAM["beta2"] ** steps.astype(np.float64))
            if len(set(steps.tolist())) == 1:  # lock-step (the usual case): scalars, as PyTorch
                denom = (square.sqrt() / float(correction2_sqrt[0])).add_(ADAM["eps"])
                p.addcdiv_(avg, denom, value=-ADAM["lr"] / float(correction1[0]))
            else:
                shape = (-1, *([1] * (p.dim() - 1)))
                c2 = torch.from_numpy(correction2_sqrt).to(p.dtype).view(shape)
                size = torch.from_numpy(ADAM["lr"] / correction1).to(p.dtype).view(shape)
                denom = (square.sqrt() / c2).add_(ADAM["eps"])
                p.sub_(size * (avg / denom))


def _padded(rows: Sequence[np.ndarray]) -> tuple[Tensor, Tensor]:
    width = max((len(r) for r in rows), default=0)
    index = np.zeros((len(rows), max(width, 1)), dtype=np.int64)
    mask = np.zeros_like(index, dtype=bool)
    for i, r in enumerate(rows):
        index[i, : len(r)] = r
        mask[i, : len(r)] = True
    return torch.from_numpy(index), torch.from_numpy(mask)


def _correct(X: Tensor, y: Tensor, weight: Tensor, bias: Tensor, index: Tensor, mask: Tensor) -> np.ndarray:
    """Correct predictions of each model on its rows (``index``/``mask``: ``[M, rows]``)."""
    models, width = index.shape
    chunk = max(1, _EVAL_BLOCK // max(1, width * X.shape[1]))
    out = np.zeros(models, dtype=np.int64)
    for start in range(0, models, chunk):
        part = slice(start, start + chunk)
        idx = index[part]
        feats = X.index_select(0, idx.reshape(-1)).view(*idx.shape, X.shape[1])
        logits = torch.baddbmm(bias[part].unsqueeze(1), feats, weight[part].transpose(1, 2))
        hits = (logits.argmax(dim=2) == y[idx]) & mask[part]
        out[part] = hits.sum(dim=1).numpy()
    return out


@torch.no_grad()
def train_batched(X: Tensor, y: Tensor, fits: Sequence[Fit], nclasses: int, setting: ClassifierSetting,
                  seed: int) -> Fitted:
    """Train every fit of ``fits`` on rows of ``X`` (labels ``y``) as SentEval's classifier, all at once.

    ``X``'s dtype is the arithmetic's (float32 as the toolkit; the tests use float64).
    """
    M, dim, bs = len(fits), X.shape[1], setting.batch_size
    w0, b0 = initial_layer(dim, nclasses, seed, X.dtype)
    weight = w0.expand(M, -1, -1).clone()
    bias = b0.expand(M, -1).clone()
    best_w, best_b = weight.clone(), bias.clone()
    opt = _Optimizer(setting.solver, weight, bias, torch.tensor([f.reg for f in fits], dtype=X.dtype))
    sizes = np.array([len(f.train) for f in fits], dtype=np.int64)
    dev_index, dev_mask = _padded([f.dev for f in fits])
    best = np.full(M, -1, dtype=np.int64)
    misses = np.zeros(M, dtype=np.int64)
    epochs = np.zeros(M, dtype=np.int64)
    live = np.arange(M)  # the models still training, in the row order of weight/bias/opt
    streams = _Streams(seed)
    nepoch = 0
    while live.size and nepoch <= setting.max_epoch:
        for epoch in range(nepoch, nepoch + setting.epoch_size):
            order = np.zeros((live.size, int(sizes[live].max())), dtype=np.int64)
            for row, m in enumerate(live):
                fit = fits[m]
                order[row, : sizes[m]] = fit.train[streams.permutation(fit.rng_prefix, int(sizes[m]), epoch)]
            order_t = torch.from_numpy(order)
            live_sizes = sizes[live]
            for start in range(0, int(live_sizes.max()), bs):
                counts = np.clip(live_sizes - start, 0, bs)
                idx = order_t[:, start : start + bs]
                width = idx.shape[1]
                feats = X.index_select(0, idx.reshape(-1)).view(live.size, width, dim)
                logits = torch.baddbmm(bias.unsqueeze(1), feats, weight.transpose(1, 2))
                grad = torch.softmax(logits, dim=2)
                grad.scatter_add_(2, y[idx].unsqueeze(2), torch.full_like(grad[..., :1], -1.0))
                full = bool((counts == width).all())
                if full:
                    grad /= width
                    rows = None
                else:
                    valid = torch.arange(width).unsqueeze(0) < torch.from_numpy(counts).unsqueeze(1)
                    grad *= (valid / torch.from_numpy(np.maximum(counts, 1)).unsqueeze(1)).to(X.dtype).unsqueeze(2)
                    rows = torch.from_numpy(np.flatnonzero(counts > 0))
                grads = [torch.bmm(grad.transpose(1, 2), feats), grad.sum(dim=1)]
                opt.step([weight, bias], grads, rows)
        nepoch += setting.epoch_size
        epochs[live] = nepoch
        live_t = torch.from_numpy(live)
        correct = _correct(X, y, weight, bias, dev_index[live_t], dev_mask[live_t])
        improved = correct > best[live]
        if improved.any():
            rows_t = torch.from_numpy(np.flatnonzero(improved))
            targets = torch.from_numpy(live[improved])
            best_w.index_copy_(0, targets, weight[rows_t])
            best_b.index_copy_(0, targets, bias[rows_t])
            best[live[improved]] = correct[improved]
        stop = ~improved & (misses[live] >= setting.tenacity)
        misses[live[~improved]] += 1
        if stop.any():
            keep = torch.from_numpy(np.flatnonzero(~stop))
            weight, bias = weight[keep], bias[keep]
            opt.keep(keep)
            live = live[~stop]
    return Fitted(best_w, best_b, best, np.array([len(f.dev) for f in fits]), epochs)
