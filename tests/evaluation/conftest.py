"""Fixtures for the evaluation tests: a real (tiny) embedder and access to the data loaders.

``shared_data`` (../shared/data, skipping when absent) comes from tests/conftest.py.
"""

from __future__ import annotations

import re
import zlib
from types import ModuleType

import numpy as np
import pytest


class HashingEmbedder:
    """Deterministic bag-of-words embedder: each lower-cased word adds a signed one-hot at crc32(word) % dim.

    A real function of the text (no randomness, no model), so equal bags of words embed equally and
    texts that share words have positive cosine. ``calls`` records every batch it was asked to encode.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.calls: list[list[str]] = []

    def encode(self, sentences: list[str]) -> np.ndarray:
        """One row per sentence, float32."""
        self.calls.append(list(sentences))
        out = np.zeros((len(sentences), self.dim), dtype=np.float32)
        for i, sentence in enumerate(sentences):
            for word in re.findall(r"\w+", sentence.lower()):
                h = zlib.crc32(word.encode("utf-8"))
                out[i, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        out[:, 0] += 1e-3  # keep empty texts away from the zero vector
        return out

    @property
    def encoded(self) -> list[str]:
        """Every sentence encoded so far, in call order."""
        return [s for batch in self.calls for s in batch]


@pytest.fixture
def embedder() -> HashingEmbedder:
    """A fresh hashing embedder."""
    return HashingEmbedder()


@pytest.fixture(scope="session")
def data_module() -> ModuleType:
    """``sentsweep.data``, or skip when its loaders are not importable."""
    try:
        from sentsweep import data
    except ImportError as err:  # pragma: no cover - only while the package is being written
        pytest.skip(f"sentsweep.data is not importable: {err}")
    missing = [
        f
        for f in ("resolve_data_dir", "sts_subsets", "scored_pairs", "labelled_pairs", "labelled_sentences")
        if not hasattr(data, f)
    ]
    if missing:
        pytest.skip(f"sentsweep.data does not provide {missing} yet")
    return data


# Chosen so that no two of these words share a hashing bucket at dim 64 (crc32 % 64).
POSITIVE_WORDS = ["good", "excellent", "wonderful", "brilliant", "nice", "perfect", "amazing", "charming"]
NEGATIVE_WORDS = ["bad", "poor", "boring", "horrible", "dull", "lame", "terrible", "ugly"]
NEUTRAL_WORDS = ["the", "movie", "film", "plot", "actor", "scene", "story", "was", "is", "a", "it", "this"]


def polarity_sentences(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """``n`` synthetic sentences, half with positive and half with negative words (label 1 / 0)."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = i % 2
        vocab = POSITIVE_WORDS if label else NEGATIVE_WORDS
        words = list(rng.choice(NEUTRAL_WORDS, size=4)) + list(rng.choice(vocab, size=2))
        rng.shuffle(words)
        texts.append(" ".join(words) + f" {i}")
        labels.append(label)
    return texts, np.array(labels)


@pytest.fixture
def polarity() -> object:
    """The :func:`polarity_sentences` generator."""
    return polarity_sentences
