"""Multi-view search spaces (define-by-run Optuna functions).

``multiview``: the view pair, one categorical over the unordered pairs of {bow, seq, dep, const}
(``"dep+const"``) and the same-view baselines (``"seq+seq"`` is Quick-Thoughts), the hidden size per
view, the learning rate, the batch size and frozen vs trainable word vectors, around the paper's setting
(dep+const, 2400, Adam 5e-4, batch 400, frozen GloVe), which is the first point (read from
:class:`~sentsweep.trainables.multiview.MultiviewConfig`'s defaults).
``multiview-demo``: the same axes at CPU scale (hidden 32-128, batches of 32-64) for a sweep in minutes.
``multiview-pairs``: the view pair only, the paper's Table 1 rows as the first and extra points.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import optuna

from sentsweep.methods.multiview.views import VIEWS
from sentsweep.search_spaces.spec import SearchSpaceSpec, default_point
from sentsweep.trainables.multiview import MultiviewConfig

#: The six unordered pairs of distinct views, in the canonical order the trainable uses ("dep+const").
VIEW_PAIRS: tuple[str, ...] = tuple(f"{a}+{b}" for a, b in combinations(VIEWS, 2))
#: Same-view baselines: (seq, seq) is Quick-Thoughts (Logeswaran & Lee 2018).
SAME_VIEW_PAIRS: tuple[str, ...] = tuple(f"{v}+{v}" for v in VIEWS)
ALL_PAIRS: tuple[str, ...] = VIEW_PAIRS + SAME_VIEW_PAIRS

#: The paper's setting of the searched parameters: the config's defaults.
PAPER_POINT: dict[str, Any] = default_point(
    MultiviewConfig, "views", "hidden_size", "lr", "batch_size", "freeze_vectors"
)
#: The paper's setting at CPU scale.
DEMO_POINT: dict[str, Any] = PAPER_POINT | {"hidden_size": 64, "batch_size": 64}


LR_RANGE = (1e-4, 2e-3)
HIDDEN_SIZES = [600, 1200, 2400]
BATCH_SIZES = [100, 200, 400]
DEMO_HIDDEN_SIZES = [32, 64, 128]
DEMO_BATCH_SIZES = [32, 64]


def _suggest(trial: optuna.Trial, hidden_sizes: Sequence[int], batch_sizes: Sequence[int]) -> None:
    """The view pair, hidden size, lr (log), batch size and frozen vs trainable vectors."""
    trial.suggest_categorical("views", list(ALL_PAIRS))
    trial.suggest_categorical("hidden_size", list(hidden_sizes))
    trial.suggest_float("lr", *LR_RANGE, log=True)
    trial.suggest_categorical("batch_size", list(batch_sizes))
    trial.suggest_categorical("freeze_vectors", [True, False])


# Module-level functions, not closures: Tune pickles the searcher, and its space, into the sweep folder.
def multiview_space(trial: optuna.Trial) -> None:
    """The paper-scale space: hidden 600-2400, batches of 100-400."""
    _suggest(trial, HIDDEN_SIZES, BATCH_SIZES)


def multiview_demo_space(trial: optuna.Trial) -> None:
    """The CPU-scale space: hidden 32-128, batches of 32-64."""
    _suggest(trial, DEMO_HIDDEN_SIZES, DEMO_BATCH_SIZES)


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
    default_point(MultiviewConfig, "views"),
    "the view pair only: dep+const, then seq+dep, seq+const and seq+seq (Quick-Thoughts)",
    extra_points=({"views": "seq+dep"}, {"views": "seq+const"}, {"views": "seq+seq"}),
)
