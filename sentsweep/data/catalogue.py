"""The datasets ``sentsweep data prepare`` knows by name: the paper-scale training data and where the hub keeps it.

Each entry names its kind (what a trial reads it as), the hub files it comes from (one or more sources,
concatenated in order) and how those files are read. The hub layout was checked against the repositories:
parquet datasets are read from the hub's own parquet conversion (revision ``refs/convert/parquet``,
``<config>/<split>/NNNN.parquet``), which exists for every dataset whatever its original format.

``--from PATH`` reads the same files from a local copy instead: the file itself for a one-file source,
or a folder laid out as the repository (the same relative paths) for the others.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sentsweep.errors import DataError

#: What a prepared dataset is read as.
PREPARED_KINDS: tuple[str, ...] = ("corpus", "labelled-pairs", "vectors")

#: How source files are read (see :mod:`sentsweep.data.streams`).
FORMATS: dict[str, str] = {
    "lines": "one sentence a line, blank lines skipped, the whole file one document (wiki1m)",
    "documents": "'# title' line opening each document, blank line between documents (sentsweep.data.corpora)",
    "parquet-text": "parquet with a text column, one sentence a row in reading order, one document",
    "parquet-nli": "parquet with premise, hypothesis and a 3-class label column (hub NLI sets)",
    "glove": "GloVe text ('word v1 ... vd' a line), plain or inside a .zip",
}
#: The formats of a corpus text file (:func:`sentsweep.data.streams.stream_text_file`).
TEXT_FORMATS: tuple[str, ...] = ("documents", "lines")

#: The hub's NLI label order (SNLI and MNLI cards: 0 entailment, 1 neutral, 2 contradiction; -1 no gold).
HUB_NLI_NAMES: tuple[str, ...] = ("entailment", "neutral", "contradiction")


@dataclass(frozen=True)
class HubSource:
    """Files of one hub repository: ``patterns`` (globs, relative to the repository root) at ``revision``."""

    repo_id: str
    patterns: tuple[str, ...]
    format: str
    repo_type: str = "dataset"
    revision: str | None = None
    member: str | None = None  # the file inside a .zip (GloVe)
    columns: Mapping[str, str] | None = None  # role -> column name (text; premise, hypothesis, label)

    @property
    def single_file(self) -> bool:
        return len(self.patterns) == 1 and not any(c in self.patterns[0] for c in "*?[")


@dataclass(frozen=True)
class Preparable:
    """A dataset ``sentsweep data prepare NAME`` can stage."""

    name: str
    kind: str
    sources: tuple[HubSource, ...]
    description: str
    licence: str
    uncased: bool | None = None  # vectors: every word lower-case


_PARQUET = "refs/convert/parquet"
_SNLI = HubSource("stanfordnlp/snli", ("plain_text/train/*.parquet",), "parquet-nli", revision=_PARQUET,
                  columns={"premise": "premise", "hypothesis": "hypothesis", "label": "label"})
_MNLI = HubSource("nyu-mll/multi_nli", ("default/train/*.parquet",), "parquet-nli", revision=_PARQUET,
                  columns={"premise": "premise", "hypothesis": "hypothesis", "label": "label"})

_ENTRIES: tuple[Preparable, ...] = (
    Preparable(
        "wiki1m", "corpus",
        (HubSource("princeton-nlp/datasets-for-simcse", ("wiki1m_for_simcse.txt",), "lines"),),
        "SimCSE's 1M English Wikipedia sentences (SNCSE's training corpus), one document in file order",
        "CC BY-SA (Wikipedia)",
    ),
    Preparable("snli-train", "labelled-pairs", (_SNLI,),
               "SNLI train (550,152 pairs; those without a gold label dropped)", "CC BY-SA 4.0"),
    Preparable("mnli-train", "labelled-pairs", (_MNLI,), "MultiNLI train (392,702 pairs)",
               "OANC / CC BY-SA 3.0 (see the dataset card)"),
    Preparable("nli-train", "labelled-pairs", (_SNLI, _MNLI),
               "SNLI train then MultiNLI train: CoSENT's (and SBERT's) NLI training set", "as SNLI and MultiNLI"),
    Preparable(
        "bookcorpus", "corpus",
        (HubSource("bookcorpus/bookcorpus", ("plain_text/train/*.parquet",), "parquet-text", revision=_PARQUET,
                   columns={"text": "text"}),),
        "BookCorpus, 74M sentences in reading order (book boundaries are not marked: one document); the "
        "large ordered corpus of Quick-Thoughts, the hub stand-in for the multi-view paper's UMBC",
        "see the dataset card",
    ),
    Preparable(
        "glove-840b", "vectors",
        (HubSource("stanfordnlp/glove", ("glove.840B.300d.zip",), "glove", repo_type="model",
                   member="glove.840B.300d.txt"),),
        "GloVe Common Crawl 840B, 2.2M cased words x 300 (the multi-view paper's frozen vectors)",
        "PDDL 1.0", uncased=False,
    ),
)

CATALOGUE: Mapping[str, Preparable] = {entry.name: entry for entry in _ENTRIES}


def local_entry(name: str, kind: str, fmt: str, pattern: str) -> Preparable:
    """An entry for a local file or folder outside the catalogue (e.g. the UMBC corpus)."""
    if kind not in PREPARED_KINDS:
        raise DataError(f"unknown kind {kind!r}; kinds: {', '.join(PREPARED_KINDS)}")
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    columns = {"text": "text"} if fmt == "parquet-text" else None
    if fmt == "parquet-nli":
        columns = {"premise": "premise", "hypothesis": "hypothesis", "label": "label"}
    return Preparable(name, kind, (HubSource("local", (pattern,), fmt, columns=columns),),
                      f"local {fmt} data", "as the source's")
