"""Encode each distinct sentence once, in length-sorted batches, and check what the embedder returns."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sentsweep.evaluation.protocols import Embedder, ProgressFn

#: Default number of sentences handed to ``Embedder.encode`` per call.
DEFAULT_BATCH_SIZE = 128


def unique_sentences(*groups: Iterable[str]) -> list[str]:
    """All distinct sentences of ``groups`` in first-seen order."""
    return list(dict.fromkeys(s for group in groups for s in group))


def encode(
    embedder: Embedder,
    sentences: list[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """Embed ``sentences`` (row ``i`` for ``sentences[i]``) as a float32 ``(n, d)`` array.

    Sentences are sent longest first in chunks of ``batch_size`` so a padding encoder wastes little
    work; the rows are put back in input order. Raises ValueError when the embedder returns an array of
    the wrong shape or with non-finite values.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    n = len(sentences)
    if n == 0:
        raise ValueError("nothing to encode: the sentence list is empty")
    order = sorted(range(n), key=lambda i: -len(sentences[i]))
    out: np.ndarray | None = None
    done = 0
    for start in range(0, n, batch_size):
        idx = order[start : start + batch_size]
        batch = [sentences[i] for i in idx]
        emb = np.asarray(embedder.encode(batch))
        if emb.ndim != 2 or emb.shape[0] != len(batch):
            raise ValueError(
                f"{type(embedder).__name__}.encode returned shape {emb.shape} for {len(batch)} "
                "sentences; expected (n_sentences, dim)"
            )
        if out is None:
            out = np.empty((n, emb.shape[1]), dtype=np.float32)
        elif emb.shape[1] != out.shape[1]:
            raise ValueError(
                f"{type(embedder).__name__}.encode changed dimension from {out.shape[1]} to {emb.shape[1]}"
            )
        out[idx] = emb
        done += len(batch)
        if progress is not None:
            progress(done, n)
    assert out is not None
    if not np.isfinite(out).all():
        raise ValueError(f"{type(embedder).__name__}.encode returned NaN or infinite values")
    return out


def encode_lookup(
    embedder: Embedder,
    sentences: list[str],
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, dict[str, int]]:
    """Encode the distinct ``sentences`` once; return the matrix and a sentence -> row index."""
    distinct = unique_sentences(sentences)
    return encode(embedder, distinct, batch_size, progress), {s: i for i, s in enumerate(distinct)}


def rows_cosine(a: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Row-wise cosine similarity of two ``(n, d)`` arrays, computed in float64.

    A zero vector has cosine 0 with everything (instead of NaN).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"expected two (n, d) arrays of the same shape, got {a.shape} and {b.shape}")
    num = np.einsum("ij,ij->i", a, b)
    den = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), eps)
    return num / den
