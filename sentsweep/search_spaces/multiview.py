"""Multi-view search spaces (define-by-run Optuna functions).

``multiview``: the view pair, one categorical over the unordered pairs of {bow, seq, dep, const}
(``"dep+const"``) and the same-view baselines (``"seq+seq"`` is Quick-Thoughts), the hidden size per
view, the learning rate, the batch size and frozen vs trainable word vectors, around the paper's setting
(dep+const, 2400, Adam 5e-4, batch 400, frozen GloVe), which is the first point.
``multiview-demo``: the same axes at CPU scale (hidden 32-128, batches of 32-64) for a sweep in minutes.
``multiview-pairs``: the view pair only, the paper's Table 1 rows as the first and extra points.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import optuna

from sentsweep.search_spaces.spec import DefineByRun, SearchSpaceSpec

VIEW_ORDER: tuple[str, ...] = ("bow", "seq", "dep", "const")
#: The six unordered pairs of distinct views, in the canonical order the trainable uses ("dep+const").
VIEW_PAIRS: tuple[str, ...] = tuple(f"{a}+{b}" for a, b in combinations(VIEW_ORDER, 2))
#: Same-view baselines: (seq, seq) is Quick-Thoughts (Logeswaran & Lee 2018).
SAME_VIEW_PAIRS: tuple[str, ...] = tuple(f"{v}+{v}" for v in VIEW_ORDER)
ALL_PAIRS: tuple[str, ...] = VIEW_PAIRS + SAME_VIEW_PAIRS

PAPER_POINT: dict[str, Any] = {
    "views": "dep+const",
    "hidden_size": 2400,
    "lr": 5e-4,
    "batch_size": 400,
    "freeze_vectors": True,
}
DEMO_POINT: dict[str, Any] = {
    "views": "dep+const",
    "hidden_size": 64,
    "lr": 5e-4,
    "batch_size": 64,
    "freeze_vectors": True,
}


def make_space(
    hidden_sizes: Sequence[int], batch_sizes: Sequence[int], lr_range: tuple[float, float] = (1e-4, 2e-3)
) -> DefineByRun:
    """A define-by-run space over the view pair, hidden size, lr (log), batch size and frozen vectors."""

    def space(trial: optuna.Trial) -> None:
        trial.suggest_categorical("views", list(ALL_PAIRS))
        trial.suggest_categorical("hidden_size", list(hidden_sizes))
        trial.suggest_float("lr", *lr_range, log=True)
        trial.suggest_categorical("batch_size", list(batch_sizes))
        trial.suggest_categorical("freeze_vectors", [True, False])

    return space


multiview_space = make_space(hidden_sizes=[600, 1200, 2400], batch_sizes=[100, 200, 400])
multiview_demo_space = make_space(hidden_sizes=[32, 64, 128], batch_sizes=[32, 64])

MULTIVIEW_SPACE = SearchSpaceSpec(
    "multiview",
    "multiview",
    multiview_space,
    dict(PAPER_POINT),
    "view pair (6 pairs + 4 same-view baselines), hidden size, lr, batch size, frozen vs trainable vectors",
)
MULTIVIEW_DEMO_SPACE = SearchSpaceSpec(
    "multiview-demo",
    "multiview",
    multiview_demo_space,
    dict(DEMO_POINT),
    "the multiview space at CPU scale (hidden 32-128, batch 32-64)",
)


def multiview_pairs_space(trial: optuna.Trial) -> None:
    """Only the view pair; every other setting is fixed by the sweep (a Table 1 reproduction)."""
    trial.suggest_categorical("views", list(ALL_PAIRS))


#: The paper's Table 1 rows: DEP+CONST first, then DEP+SEQ, SEQ+CONST and Quick-Thoughts (SEQ+SEQ).
MULTIVIEW_PAIRS_SPACE = SearchSpaceSpec(
    "multiview-pairs",
    "multiview",
    multiview_pairs_space,
    {"views": "dep+const"},
    "the view pair only: dep+const, then seq+dep, seq+const and seq+seq (Quick-Thoughts)",
    extra_points=({"views": "seq+dep"}, {"views": "seq+const"}, {"views": "seq+seq"}),
)
