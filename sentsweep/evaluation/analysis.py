"""Diagnostics from SNCSE (seed paper 002): rank-based error analysis and similarity distributions.

* Rank-based error analysis (SNCSE section 5, eq. 11): within one task, every pair gets its rank among
  the gold scores, R_G, and among the predicted cosines, R_E (ascending; ties get their average rank,
  ``scipy.stats.rankdata(method="average")``, the ranks Spearman's rho uses). The estimation error of a
  pair is ``|R_G - R_E|``; the pairs with the largest errors are listed. Ranks are relative to the task
  (for STS12-16, to the concatenation of the year's subsets, the "all" protocol).
* Similarity distributions (SNCSE Figure 4): cosines of ``(sentence, partner)`` pairs, e.g.
  ``cos(s, neg(s))`` against ``cos(s, random sentence)``, with a numeric :func:`summary`, on sentences
  drawn by :func:`sample_sts_sentences` (5000 from the seven STS tasks, as the paper).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from sentsweep.evaluation._encoding import DEFAULT_BATCH_SIZE, encode_lookup, rows_cosine
from sentsweep.evaluation.protocols import Embedder
from sentsweep.evaluation.sts import STS_YEARS, load_sts_sets

#: The sets SNCSE's Figure 4 draws its sentences from: the seven STS tasks' evaluation sets.
FIGURE4_STS_SETS: tuple[str, ...] = (*STS_YEARS, "stsb_test", "sickr_test")
#: How many sentences the paper's Figure 4 uses.
FIGURE4_SENTENCES = 5000

RANK_COLUMNS: tuple[str, ...] = ("s1", "s2", "gold", "predicted", "gold_rank", "pred_rank", "rank_error")


def rank_errors(pairs: Sequence[Any], predicted_scores: ArrayLike, k: int | None = 10) -> pd.DataFrame:
    """The ``k`` pairs with the largest rank error ``|gold rank - predicted rank|`` (SNCSE eq. 11).

    ``pairs`` are objects with ``s1``, ``s2`` and ``score`` (gold); ``predicted_scores[i]`` is the model's
    similarity for ``pairs[i]``. Ranks are 1-based, ascending, with average ranks for ties. Columns:
    s1, s2, gold, predicted, gold_rank, pred_rank, rank_error; the index is the pair's position in
    ``pairs``. Sorted by rank_error descending (stable: equal errors keep input order); ``k=None`` keeps
    every pair.
    """
    pred = np.asarray(predicted_scores, dtype=np.float64).ravel()
    if len(pairs) != pred.size:
        raise ValueError(f"{len(pairs)} pairs but {pred.size} predicted scores")
    if k is not None and k < 0:
        raise ValueError(f"k must be >= 0 or None, got {k}")
    gold = np.array([p.score for p in pairs], dtype=np.float64)
    gold_rank = rankdata(gold, method="average")
    pred_rank = rankdata(pred, method="average")
    frame = pd.DataFrame(
        {
            "s1": [p.s1 for p in pairs],
            "s2": [p.s2 for p in pairs],
            "gold": gold,
            "predicted": pred,
            "gold_rank": gold_rank,
            "pred_rank": pred_rank,
            "rank_error": np.abs(gold_rank - pred_rank),
        }
    )
    frame = frame.sort_values("rank_error", ascending=False, kind="stable")
    return frame if k is None else frame.head(k)


def worst_pairs(
    embedder: Embedder,
    tasks: Sequence[str] | str = ("sts14", "sickr"),
    data_dir: str | Path | None = None,
    k: int = 10,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> pd.DataFrame:
    """The ``k`` worst pairs by rank error for each STS set of ``tasks`` (task names as for evaluate_sts).

    The default follows SNCSE's Table 4 (STS14 and SICK-R, the two largest). Columns: task (the set's
    metric key, e.g. ``sts14_all``, ``sickr_test``), subset, then those of :func:`rank_errors`, with
    ``position`` the pair's index within the set.
    """
    sets = load_sts_sets(tasks, data_dir)
    sentences = [s for st in sets for p in st.pairs for s in (p.s1, p.s2)]
    emb, row = encode_lookup(embedder, sentences, batch_size)
    frames = []
    for st in sets:
        pairs = st.pairs
        subsets = [name for name, group in st.subsets.items() for _ in group]
        cos = rows_cosine(emb[[row[p.s1] for p in pairs]], emb[[row[p.s2] for p in pairs]])
        worst = rank_errors(pairs, cos, k)
        worst.insert(0, "subset", [subsets[i] for i in worst.index])
        worst.insert(0, "task", st.key)
        frames.append(worst.rename_axis("position").reset_index())
    columns = ["task", "subset", "position", *RANK_COLUMNS]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame(columns=columns)


def similarity_distribution(
    embedder: Embedder,
    sentences: Sequence[str],
    partners: Sequence[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> np.ndarray:
    """Cosine of each ``(sentences[i], partners[i])`` pair, shape ``(n,)``, float64.

    With ``partners = [neg(s) for s in sentences]`` this is SNCSE's soft-negative similarity; with
    :func:`random_partners` it is the negative-pair baseline of its Figure 4.
    """
    if len(sentences) != len(partners):
        raise ValueError(f"{len(sentences)} sentences but {len(partners)} partners")
    if not sentences:
        raise ValueError("no sentence pairs given")
    emb, row = encode_lookup(embedder, [*sentences, *partners], batch_size)
    return rows_cosine(emb[[row[s] for s in sentences]], emb[[row[s] for s in partners]])


def sample_sts_sentences(
    n: int = FIGURE4_SENTENCES,
    seed: int = 0,
    tasks: Sequence[str] | str = FIGURE4_STS_SETS,
    data_dir: str | Path | None = None,
) -> list[str]:
    """Up to ``n`` distinct sentences drawn uniformly, without replacement, from the pairs of ``tasks``.

    SNCSE's Figure 4 uses 5000 sentences from the STS tasks; the default draws them from all seven
    (STS12-16 "all", STS-B test, SICK-R test). The draw depends only on ``seed`` and the data: the
    distinct sentences are taken in file order (first occurrence), sampled with
    ``numpy.random.default_rng(seed)`` and returned in that order. With fewer than ``n`` distinct
    sentences, all are returned.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    sets = load_sts_sets(tasks, data_dir)
    sentences = list(dict.fromkeys(s for st in sets for p in st.pairs for s in (p.s1, p.s2)))
    if len(sentences) <= n:
        return sentences
    keep = np.sort(np.random.default_rng(seed).choice(len(sentences), n, replace=False))
    return [sentences[i] for i in keep]


def random_partners(sentences: Sequence[str], seed: int = 0) -> list[str]:
    """Each sentence paired with a different random sentence of the list (a seeded cyclic shift).

    The sentences are shuffled and each is matched with its successor in the shuffled order, so no
    sentence is its own partner (given at least two distinct positions) and every sentence is used once
    as a partner.
    """
    n = len(sentences)
    if n < 2:
        raise ValueError("random partners need at least two sentences")
    order = np.random.default_rng(seed).permutation(n)
    partner = np.empty(n, dtype=np.int64)
    partner[order] = np.roll(order, -1)
    return [sentences[j] for j in partner]


def summary(values: ArrayLike) -> dict[str, float]:
    """Summary statistics of a similarity distribution: n, mean, std, min, q05, q25, median, q75, q95, max,
    and ``mode``, the centre of the fullest of 50 equal-width histogram bins (the "peak" SNCSE quotes).
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("no values to summarise")
    q05, q25, q50, q75, q95 = np.quantile(v, [0.05, 0.25, 0.5, 0.75, 0.95])
    try:
        counts, edges = np.histogram(v, bins=50)
        peak = int(np.argmax(counts))
        mode = float((edges[peak] + edges[peak + 1]) / 2)
    except ValueError:  # (nearly) constant values: no 50 distinct bins
        mode = float(q50)
    return {
        "n": float(v.size),
        "mean": float(v.mean()),
        "std": float(v.std()),
        "min": float(v.min()),
        "q05": float(q05),
        "q25": float(q25),
        "median": float(q50),
        "q75": float(q75),
        "q95": float(q95),
        "max": float(v.max()),
        "mode": mode,
    }


def compare_distributions(named: dict[str, ArrayLike]) -> pd.DataFrame:
    """One :func:`summary` row per named distribution (e.g. ``{"negation": ..., "random": ...}``)."""
    return pd.DataFrame({name: summary(v) for name, v in named.items()}).T.rename_axis("distribution")
