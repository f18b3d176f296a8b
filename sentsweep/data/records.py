"""Plain typed records every loader returns; the science consumes only these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

#: NLI labels in the order CoSENT needs (contradiction < neutral < entailment).
NLI_LABELS: tuple[str, ...] = ("contradiction", "neutral", "entailment")


@dataclass(frozen=True, slots=True)
class ScoredPair:
    """A sentence pair with a real-valued gold similarity (STS 0-5, SICK 1-5)."""

    s1: str
    s2: str
    score: float


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """A sentence pair with an integer class (MRPC 0/1; NLI 0 contradiction, 1 neutral, 2 entailment)."""

    s1: str
    s2: str
    label: int


@dataclass(frozen=True, slots=True)
class LabelledSentence:
    """One sentence with an integer class (MR, CR, SUBJ, MPQA, TREC, SST2)."""

    text: str
    label: int


@dataclass(frozen=True, slots=True)
class Document:
    """An ordered run of sentences (a Wikipedia article, a Brown file, a PTB split).

    ``sentences`` is a tuple for the loaders of small files and a memory-mapped
    :class:`~sentsweep.data.columns.TextColumn` for prepared corpora (indexing, slicing, ``len`` alike).
    """

    title: str
    sentences: Sequence[str] = field(default_factory=tuple)
