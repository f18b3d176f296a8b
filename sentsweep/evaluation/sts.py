"""Unsupervised STS evaluation: cosine of the two embeddings against gold, Spearman x100.

Protocol: no regressor is trained. STS12-16 use the "all" protocol of
SimCSE and its successors: the pairs of every subset of a year are concatenated (pairs without a gold
score dropped) and one Spearman correlation is computed. STS-B and SICK-R are scored on their test split
(STS-B dev is what training selects on). The headline figure ``sts_avg7`` is the mean of the seven.

Per-subset figures and SentEval's ``mean`` (plain mean over subsets) and ``wmean`` (weighted by the
number of pairs) are reported alongside; note that SentEval's "all" means those averages, not the
concatenation, and the two can differ by several points.

Metric keys are ``<task>_<subset>`` for every table row: ``sts12_all``, ``sts12_mean``,
``sts12_wmean``, ``sts12_MSRpar`` (subset names as the data files spell them), ``stsb_dev``,
``stsb_test``, ``sickr_test``, and ``sts_avg7``.

``nli_dev`` is the dev set of CoSENT's NLI transfer, scored as the CoSENT reference (``main.py``) scores its NLI
dev set with sentence-transformers' ``EmbeddingSimilarityEvaluator``: Spearman x100 of the cosine against the
label, contradiction 0 < neutral 1 < entailment 2. Its pairs are SNLI dev (9,842 pairs in the shared data, in
SentEval's layout and tokenization); the reference's AllNLI dev set also holds MultiNLI's dev pairs, which the
shared data lacks.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import spearmanr

from sentsweep.data.records import LabelledPair, ScoredPair
from sentsweep.evaluation._encoding import DEFAULT_BATCH_SIZE, encode_lookup, rows_cosine
from sentsweep.evaluation.metric_names import (  # noqa: F401 - the names are this module's API too
    AVG7_KEYS,
    LABELLED_TASKS,
    NLI_DEV,
    SELECTION_METRIC,
    SICKR_TRIAL,
    STS_TASK_SPLITS,
    STS_TASKS,
    STS_YEARS,
    STSB_DEV,
)
from sentsweep.evaluation.metric_protocols import attach_protocols
from sentsweep.evaluation.protocols import Embedder, ProgressFn
from sentsweep.evaluation.results import EvalResult

# --------------------------------------------------------------------------------------------------
# Pure functions on arrays


def spearman(predicted: ArrayLike, gold: ArrayLike) -> float:
    """Spearman's rank correlation x100 (ties get average ranks); NaN when either side is constant."""
    p = np.asarray(predicted, dtype=np.float64).ravel()
    g = np.asarray(gold, dtype=np.float64).ravel()
    if p.shape != g.shape:
        raise ValueError(f"predicted has {p.size} values but gold has {g.size}")
    if p.size < 2 or np.ptp(p) == 0 or np.ptp(g) == 0:
        return math.nan
    return float(spearmanr(p, g).statistic) * 100.0


def spearman_cosine(emb1: np.ndarray, emb2: np.ndarray, gold: ArrayLike) -> float:
    """Spearman x100 between the row-wise cosine of ``emb1`` and ``emb2`` and the gold scores."""
    return spearman(rows_cosine(emb1, emb2), gold)


def subset_spearman(subsets: Mapping[str, tuple[ArrayLike, ArrayLike]]) -> dict[str, float]:
    """Per-subset Spearman plus the three aggregates of an STS year, all x100.

    ``subsets`` maps a subset name to ``(predicted, gold)``. Returns each subset's figure and
    ``all`` (one Spearman over the concatenation of every subset: the protocol this project reports),
    ``mean`` (the unweighted mean of the subset figures) and ``wmean`` (weighted by subset size).
    """
    if not subsets:
        raise ValueError("no subsets to score")
    reserved = {"all", "mean", "wmean"} & set(subsets)
    if reserved:
        raise ValueError(f"subset names {sorted(reserved)} are reserved for the aggregates")
    out: dict[str, float] = {}
    sizes: list[int] = []
    preds: list[np.ndarray] = []
    golds: list[np.ndarray] = []
    for name, (pred, gold) in subsets.items():
        p = np.asarray(pred, dtype=np.float64).ravel()
        g = np.asarray(gold, dtype=np.float64).ravel()
        out[name] = spearman(p, g)
        sizes.append(p.size)
        preds.append(p)
        golds.append(g)
    values = np.array([out[name] for name in subsets])
    out["all"] = spearman(np.concatenate(preds), np.concatenate(golds))
    out["mean"] = float(np.mean(values))
    out["wmean"] = float(np.average(values, weights=np.asarray(sizes, dtype=np.float64)))
    return out


def sts_avg7(metrics: Mapping[str, float]) -> float | None:
    """The mean of the seven headline STS figures, or None unless all seven keys are in ``metrics``."""
    if not all(k in metrics for k in AVG7_KEYS):
        return None
    return float(np.mean([metrics[k] for k in AVG7_KEYS]))


# --------------------------------------------------------------------------------------------------
# Data


@dataclass(frozen=True)
class StsSet:
    """One scored unit: a task at one split, with its pairs grouped by subset.

    STS12-16 have split ``all`` and several subsets; STS-B and SICK-R have one subset named after the
    split. ``key`` is the headline metric key (``sts12_all``, ``stsb_dev``, ``sickr_test``).
    """

    task: str
    split: str
    subsets: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The headline metric key of this set."""
        return f"{self.task}_{self.split}"

    @property
    def pairs(self) -> list[Any]:
        """Every pair of every subset, concatenated in subset order."""
        return [p for pairs in self.subsets.values() for p in pairs]


def resolve_sts_tasks(tasks: Sequence[str] | str) -> list[tuple[str, str]]:
    """Expand task names to distinct ``(task, split)`` sets, in order; unknown names raise ValueError.

    A string may hold several comma-separated names.
    """
    names = _split_names(tasks)
    unknown = [t for t in names if t not in STS_TASK_SPLITS]
    if unknown:
        raise ValueError(f"unknown STS task(s) {unknown}; valid names: {', '.join(STS_TASK_SPLITS)}")
    if not names:
        raise ValueError(f"no STS task given; valid names: {', '.join(STS_TASK_SPLITS)}")
    return list(dict.fromkeys(s for t in names for s in STS_TASK_SPLITS[t]))


def load_sts_sets(tasks: Sequence[str] | str = STS_TASKS, data_dir: str | Path | None = None) -> list[StsSet]:
    """Load the pairs of ``tasks`` from ``sentsweep.data`` (pairs with a NaN gold score dropped); a task of
    :data:`LABELLED_TASKS` (``nli``) reads its labelled pairs with the class as the gold score."""
    from sentsweep import data

    wanted = resolve_sts_tasks(tasks)
    source = data.resolve_data_dir(data_dir)
    sets: list[StsSet] = []
    for task, split in wanted:
        if task in STS_YEARS:
            subsets = data.sts_subsets(task, data_dir=source)
        elif task in LABELLED_TASKS:
            subsets = {split: labels_as_scores(data.labelled_pairs(LABELLED_TASKS[task], split, data_dir=source))}
        else:
            subsets = {split: data.scored_pairs(task, split, data_dir=source)}
        clean = {name: [p for p in pairs if not math.isnan(p.score)] for name, pairs in subsets.items()}
        sets.append(StsSet(task, split, {k: v for k, v in clean.items() if v}))
    return sets


def labels_as_scores(pairs: Sequence[LabelledPair]) -> list[ScoredPair]:
    """Labelled pairs with their class index as the gold score, so the STS scorer ranks them: for NLI contradiction
    0 < neutral 1 < entailment 2, the scores the CoSENT reference's ``EmbeddingSimilarityEvaluator`` correlates the
    cosine with (``InputExample(label=0/1/2)``)."""
    return [ScoredPair(p.s1, p.s2, float(p.label)) for p in pairs]


def data_info(data_dir: str | Path | None) -> dict[str, Any]:
    """Where the data came from: ``{"data_root": ..., "data_is_sample": ...}``."""
    from sentsweep import data

    source = data.resolve_data_dir(data_dir)
    return {"data_root": str(source.root), "data_is_sample": bool(source.is_sample)}


# --------------------------------------------------------------------------------------------------
# Evaluation


def evaluate_pairs(embedder: Embedder, pairs: Sequence[Any], batch_size: int = DEFAULT_BATCH_SIZE) -> float:
    """Spearman x100 of cosine against gold for ``pairs`` (objects with ``s1``, ``s2``, ``score``).

    Each distinct sentence is encoded once.
    """
    if not pairs:
        raise ValueError("no pairs to evaluate")
    emb, row = encode_lookup(embedder, [s for p in pairs for s in (p.s1, p.s2)], batch_size)
    cos = rows_cosine(emb[[row[p.s1] for p in pairs]], emb[[row[p.s2] for p in pairs]])
    return spearman(cos, [p.score for p in pairs])


def score_sets(
    embedder: Embedder,
    sets: Sequence[StsSet],
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
) -> EvalResult:
    """Score already-loaded sets: every distinct sentence across all sets is encoded exactly once."""
    sentences = [s for st in sets for p in st.pairs for s in (p.s1, p.s2)]
    emb, row = encode_lookup(embedder, sentences, batch_size, progress)
    return _score(sets, lambda pairs: rows_cosine(emb[[row[p.s1] for p in pairs]], emb[[row[p.s2] for p in pairs]]))


#: Predicted similarities for a list of pairs (objects with ``s1``, ``s2``): a pair scorer such as a
#: cross-encoder, where there is no sentence embedding to take the cosine of.
PairScorer = Callable[[list[Any]], ArrayLike]


def _score(sets: Sequence[StsSet], predict: PairScorer) -> EvalResult:
    """Spearman of ``predict`` against gold on every subset of ``sets``, with the aggregates."""
    metrics: dict[str, float] = {}
    rows: list[dict[str, Any]] = []
    for st in sets:
        scored = {
            name: (np.asarray(predict(pairs), dtype=np.float64), np.array([p.score for p in pairs], dtype=np.float64))
            for name, pairs in st.subsets.items()
        }
        n_pairs = {name: len(pairs) for name, pairs in st.subsets.items()}
        if st.task in STS_YEARS:
            figures = subset_spearman(scored)
            total = sum(n_pairs.values())
            n_pairs.update(all=total, mean=total, wmean=total)
        else:
            ((name, (cos, gold)),) = scored.items()
            figures = {name: spearman(cos, gold)}
        for subset, value in figures.items():
            metrics[f"{st.task}_{subset}"] = value
            rows.append({"task": st.task, "subset": subset, "n_pairs": n_pairs[subset], "spearman": value})
    avg = sts_avg7(metrics)
    if avg is not None:
        metrics["sts_avg7"] = avg
        rows.append(
            {"task": "sts", "subset": "avg7", "n_pairs": sum(_n(rows, k) for k in AVG7_KEYS), "spearman": avg}
        )
    table = pd.DataFrame(rows, columns=["task", "subset", "n_pairs", "spearman"])
    return EvalResult(metrics, table)


def _n(rows: list[dict[str, Any]], key: str) -> int:
    return next(r["n_pairs"] for r in rows if f"{r['task']}_{r['subset']}" == key)


class StsEvaluator:
    """Loads the pairs of ``tasks`` once and scores any embedder on them (re-usable during training).

    ``StsEvaluator([STSB_DEV])(embedder).metrics[STSB_DEV]`` is the model-selection figure (every
    trainable scores its dev set this way); :meth:`score_pairs` scores a pair scorer (a cross-encoder)
    on the same sets. ``max_pairs`` keeps that many pairs of each set, a seeded sample (:func:`sampled_pairs`: a
    quick dev evaluation);
    ``primary_metric`` names the headline key of the first requested set.
    """

    def __init__(
        self,
        tasks: Sequence[str] | str = STS_TASKS,
        data_dir: str | Path | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_pairs: int | None = None,
    ) -> None:
        sets = load_sts_sets(tasks, data_dir)
        if max_pairs is not None:
            sets = [sampled_pairs(st, max_pairs) for st in sets]
        self.sets = sets
        self.batch_size = batch_size
        self.info = {**data_info(data_dir), "sts_protocol": "all (concatenated subsets), cosine, spearman"}
        if max_pairs is not None:
            self.info.update({"sts_max_pairs": max_pairs, "sts_sample_seed": SAMPLE_SEED})
        keys = [st.key for st in self.sets]
        self.primary_metric = "sts_avg7" if all(k in keys for k in AVG7_KEYS) else keys[0]

    def __call__(self, embedder: Embedder, progress: ProgressFn | None = None) -> EvalResult:
        """Score ``embedder`` on the loaded sets (cosine of the two embeddings)."""
        result = score_sets(embedder, self.sets, self.batch_size, progress)
        result.info.update(self.info)
        return attach_protocols(result, embedder)

    def score_pairs(self, scorer: PairScorer, precision: str | None = None) -> EvalResult:
        """Score a model that rates a pair directly (``scorer(pairs) -> similarities``) on the loaded sets;
        ``precision``: what the scorer computes in (the metric protocol's, ``unknown`` when not given)."""
        result = _score(self.sets, scorer)
        result.info.update({**self.info, "sts_protocol": "all (concatenated subsets), pair scores, spearman"})
        if precision is not None:
            result.info["eval_precision"] = precision
        return attach_protocols(result, None)


#: The seed of the pairs a ``max_pairs`` evaluator keeps: every trial of every sweep scores the same pairs.
SAMPLE_SEED = 0


def sample_indices(total: int, limit: int) -> list[int]:
    """``limit`` of the row numbers ``0..total-1``, in order: those whose sha256 of ``"<SAMPLE_SEED>:<row>"`` is
    smallest. A hash, not a random generator: the same rows with any numpy (whose generators may change their
    streams between versions), so a protocol's "N pairs sampled (seed 0)" names one set of pairs."""
    if limit >= total:
        return list(range(total))
    ranked = sorted(range(total), key=lambda row: hashlib.sha256(f"{SAMPLE_SEED}:{row}".encode()).digest())
    return sorted(ranked[:limit])


def sampled_pairs(st: StsSet, limit: int) -> StsSet:
    """``st`` cut to ``limit`` pairs (:func:`sample_indices` over its pairs, in file order). Not the first pairs:
    STS-B's files are sorted by genre (its dev set opens with 625 video and image captions, then forums and news),
    so a cut at the top would select models on captions alone."""
    sizes = [len(pairs) for pairs in st.subsets.values()]
    total = sum(sizes)
    if limit >= total:
        return st
    chosen = np.asarray(sample_indices(total, limit))
    kept: dict[str, list[Any]] = {}
    offset = 0
    for (name, pairs), size in zip(st.subsets.items(), sizes, strict=True):
        inside = chosen[(chosen >= offset) & (chosen < offset + size)] - offset
        if len(inside):
            kept[name] = [pairs[i] for i in inside]
        offset += size
    return StsSet(st.task, st.split, kept)


def evaluate_sts(
    embedder: Embedder,
    tasks: Sequence[str] | str = STS_TASKS,
    data_dir: str | Path | None = None,
    progress: ProgressFn | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> EvalResult:
    """Evaluate ``embedder`` on STS tasks; names are those of :data:`STS_TASK_SPLITS`.

    ``"sts12"``..``"sts16"`` (all protocol, plus per-subset, mean and wmean), ``"stsb"`` (dev and test),
    ``"stsb_dev"``, ``"stsb_test"``, ``"sickr"``/``"sickr_test"``, ``"sickr_trial"``, ``"nli_dev"`` (SNLI dev
    against its labels). Every distinct sentence of all requested tasks is encoded once. ``sts_avg7`` is added
    only when all seven headline sets ran.
    Unknown names raise ValueError; missing data files raise ``sentsweep.errors.DataError``.
    """
    return StsEvaluator(tasks, data_dir, batch_size)(embedder, progress)


def _split_names(tasks: Sequence[str] | str) -> list[str]:
    if isinstance(tasks, str):
        tasks = [tasks]
    return [name.strip().lower() for t in tasks for name in t.split(",") if name.strip()]
