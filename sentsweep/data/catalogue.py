"""The datasets ``sentsweep data prepare`` knows by name: the paper-scale training data and where the hub keeps it.

Each entry names its kind (what a trial reads it as), the hub files it comes from (one or more sources,
concatenated in order) and how those files are read. The hub layout was checked against the repositories:
parquet datasets are read from the hub's own parquet conversion (revision ``refs/convert/parquet``,
``<config>/<split>/NNNN.parquet``), which exists for every dataset whatever its original format.

``--from PATH`` reads the same files from a local copy instead: the file itself for a one-file source,
or a folder laid out as the repository (the same relative paths) for the others. A dataset outside the
catalogue is described on the command line (:class:`CustomSource`): a user's scored pairs or corpus, from a
local file or from any hub dataset's parquet conversion.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sentsweep.errors import DataError

#: What a prepared dataset is read as.
PREPARED_KINDS: tuple[str, ...] = ("corpus", "labelled-pairs", "scored-pairs", "vectors")

#: How source files are read (see :mod:`sentsweep.data.streams` and :mod:`sentsweep.data.scored_files`).
FORMATS: dict[str, str] = {
    "lines": "one sentence a line, blank lines skipped, the whole file one document (wiki1m)",
    "documents": "'# title' line opening each document, blank line between documents (sentsweep.data.corpora)",
    "parquet-text": "parquet with a text column, one sentence a row in reading order, one document",
    "parquet-nli": "parquet with premise, hypothesis and a 3-class label column (hub NLI sets)",
    "glove": "GloVe text ('word v1 ... vd' a line), plain or inside a .zip",
    "csv": "comma-separated with a header line naming the two sentence columns and the score column",
    "tsv": "tab-separated with a header line, no quoting (a tab never inside a sentence)",
    "jsonl": "one JSON object a line holding the two sentences and the score",
    "parquet-scored": "parquet with the two sentence columns and the score column (the hub's conversion)",
}
#: The kind each format makes.
FORMAT_KINDS: dict[str, str] = {
    "lines": "corpus", "documents": "corpus", "parquet-text": "corpus", "parquet-nli": "labelled-pairs",
    "glove": "vectors", "csv": "scored-pairs", "tsv": "scored-pairs", "jsonl": "scored-pairs",
    "parquet-scored": "scored-pairs",
}
#: The roles of each format's columns, and the column names they default to (the hub's STS sets' names).
DEFAULT_COLUMNS: dict[str, dict[str, str]] = {
    "parquet-text": {"text": "text"},
    "parquet-nli": {"premise": "premise", "hypothesis": "hypothesis", "label": "label"},
    **{fmt: {"s1": "sentence1", "s2": "sentence2", "score": "score"}
       for fmt, kind in FORMAT_KINDS.items() if kind == "scored-pairs"},
}
#: The format a file's suffix implies, for scored pairs (``--format`` may be left out).
SUFFIX_FORMATS: dict[str, str] = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".parquet": "parquet-scored"}
#: The hub's parquet conversion: every dataset, whatever its original files, as ``<subset>/<split>/NNNN.parquet``.
HUB_PARQUET = "refs/convert/parquet"
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
    columns: Mapping[str, str] | None = None  # role -> column name (text; premise, hypothesis, label; s1, s2, score)
    score_range: tuple[float, float] | None = None  # scored pairs: every score in [low, high]


@dataclass(frozen=True)
class Preparable:
    """A dataset ``sentsweep data prepare NAME`` can stage."""

    name: str
    kind: str
    sources: tuple[HubSource, ...]
    description: str
    licence: str
    uncased: bool | None = None  # vectors: every word lower-case


_SNLI = HubSource("stanfordnlp/snli", ("plain_text/train/*.parquet",), "parquet-nli", revision=HUB_PARQUET,
                  columns={"premise": "premise", "hypothesis": "hypothesis", "label": "label"})
_MNLI = HubSource("nyu-mll/multi_nli", ("default/train/*.parquet",), "parquet-nli", revision=HUB_PARQUET,
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
        (HubSource("bookcorpus/bookcorpus", ("plain_text/train/*.parquet",), "parquet-text", revision=HUB_PARQUET,
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


@dataclass(frozen=True)
class CustomSource:
    """A dataset outside the catalogue as the command line describes it: its ``kind``, the ``format`` of its
    files (None: from the file's suffix, or the hub's parquet for ``hub``), a hub repository with its ``subset``
    and ``split``, the ``columns`` to read (in the order of the format's roles) and, for scored pairs, the
    ``score_range`` every score must lie in."""

    kind: str
    format: str | None = None
    hub: str | None = None
    subset: str = "default"
    split: str = "train"
    columns: tuple[str, ...] | None = None
    score_range: tuple[float, float] | None = None


def _custom_format(spec: CustomSource, from_path: Path | None) -> str:
    """The format given, else the one the hub or the file's suffix implies; a DataError when none does."""
    if spec.format is not None:
        fmt = spec.format
    elif spec.hub is not None and spec.kind in ("scored-pairs", "corpus"):
        fmt = "parquet-scored" if spec.kind == "scored-pairs" else "parquet-text"
    elif spec.kind == "scored-pairs" and from_path is not None and from_path.suffix.lower() in SUFFIX_FORMATS:
        fmt = SUFFIX_FORMATS[from_path.suffix.lower()]
    else:
        known = ", ".join(f for f, k in FORMAT_KINDS.items() if k == spec.kind)
        raise DataError(f"--kind {spec.kind} needs --format ({known})")
    if fmt not in FORMATS:
        raise DataError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    if FORMAT_KINDS[fmt] != spec.kind:
        raise DataError(f"--format {fmt} makes {FORMAT_KINDS[fmt]} data, not {spec.kind}")
    return fmt


def _custom_columns(fmt: str, given: tuple[str, ...] | None) -> dict[str, str] | None:
    defaults = DEFAULT_COLUMNS.get(fmt)
    if given is None:
        return defaults
    if defaults is None or len(given) != len(defaults) or not all(given):
        roles = ",".join(defaults) if defaults else "none"
        raise DataError(f"--columns: format {fmt} reads columns {roles}, got {','.join(given)!r}")
    return dict(zip(defaults, given, strict=True))


def custom_entry(name: str, spec: CustomSource, from_path: Path | None) -> Preparable:
    """The entry of a dataset outside the catalogue: local files (``from_path``), or the hub's parquet conversion
    of ``spec.hub`` (``<subset>/<split>/*.parquet`` at :data:`HUB_PARQUET`; a folder given as ``from_path`` is
    read as a copy of that repository)."""
    if spec.kind not in PREPARED_KINDS:
        raise DataError(f"unknown kind {spec.kind!r}; kinds: {', '.join(PREPARED_KINDS)}")
    if from_path is None and spec.hub is None:
        raise DataError(f"{name!r} is not in the catalogue ({', '.join(CATALOGUE)}): a dataset of your own needs "
                        "--from PATH or --hub REPO, and --kind")
    if spec.hub is not None and spec.kind == "vectors":
        raise DataError("--hub reads a dataset's parquet conversion: scored pairs, a corpus or labelled pairs, "
                        "not vectors")
    fmt = _custom_format(spec, from_path)
    if spec.kind == "scored-pairs" and spec.score_range is None:
        raise DataError("scored pairs need --score-range LOW,HIGH: the scale of the scores (e.g. 0,5); a score "
                        "outside it is refused, and the range travels with the data")
    if spec.kind != "scored-pairs" and spec.score_range is not None:
        raise DataError(f"--score-range applies to scored pairs, not {spec.kind}")
    columns = _custom_columns(fmt, spec.columns)
    if spec.hub is not None:
        source = HubSource(spec.hub, (f"{spec.subset}/{spec.split}/*.parquet",), fmt, revision=HUB_PARQUET,
                           columns=columns, score_range=spec.score_range)
        return Preparable(name, spec.kind, (source,), f"{spec.hub} ({spec.subset}, {spec.split})",
                          "see the dataset card")
    source = HubSource("local", ("*",), fmt, columns=columns, score_range=spec.score_range)
    assert from_path is not None
    return Preparable(name, spec.kind, (source,), f"{from_path.name} ({fmt})", "as the source's")
