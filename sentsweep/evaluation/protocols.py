"""What evaluation needs from a model: something that turns sentences into vectors.

Evaluation never depends on a particular encoder. A transformer encoder, the multi-view tree encoder, a
``sentence_transformers.SentenceTransformer`` or a ten-line bag-of-words function object all satisfy
:class:`Embedder`, so every metric in this package can be computed for any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

#: Progress callback: called as ``progress(done, total)`` with the number of sentences encoded so far.
ProgressFn = Callable[[int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """A sentence encoder: ``encode(sentences)`` returns one float32 row per sentence, shape ``(n, d)``.

    Evaluation calls ``encode`` with lists of at most ``batch_size`` sentences (the evaluator's
    argument), each list sorted by length, and puts eval mode, devices and gradients in the
    embedder's hands: it only reads the returned array.
    """

    def encode(self, sentences: list[str]) -> np.ndarray:
        """Embed ``sentences``; row ``i`` of the result is the embedding of ``sentences[i]``."""
        ...
