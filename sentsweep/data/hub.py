"""The Hugging Face hub, for users with internet: thin wrappers around ``datasets.load_dataset``, and
:func:`hub_files` (``huggingface_hub``'s downloads) for the large files ``sentsweep data prepare`` stages.

Each ``hub_*`` loader downloads one split and hands it to a pure conversion function
(``*_from_dataset``) that turns a ``datasets.Dataset`` into the package's records; the conversion
functions are what the tests exercise, on in-memory datasets. ``datasets`` is imported only when a
hub loader runs.

Column names and score scales default per repository from :data:`HUB_DEFAULTS`, then to the generic
defaults in each signature; explicit arguments always win.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.data.records import NLI_LABELS, Document, LabelledPair, ScoredPair
from sentsweep.errors import DataError

if TYPE_CHECKING:
    import datasets

#: Well-known repositories and the arguments that read them correctly (checked against the dataset
#: cards). ``scale`` multiplies the stored score: ``sentence-transformers/stsb`` stores STS-B scores
#: divided by 5 (0-1), so scale 5 restores the usual 0-5; the mteb copies keep the original scales
#: (STS 0-5, SICK-R 1-5). NLI repositories label 0 entailment, 1 neutral, 2 contradiction as a
#: ClassLabel; the conversion remaps those names to NLI_LABELS order and drops label -1 (no gold).
HUB_DEFAULTS: dict[str, dict[str, Any]] = {
    "sentence-transformers/stsb": {"s1": "sentence1", "s2": "sentence2", "score": "score", "scale": 5.0},
    "mteb/stsbenchmark-sts": {"s1": "sentence1", "s2": "sentence2", "score": "score", "scale": 1.0},
    "mteb/sickr-sts": {"s1": "sentence1", "s2": "sentence2", "score": "score", "scale": 1.0},
    **{
        f"mteb/sts{year}-sts": {"s1": "sentence1", "s2": "sentence2", "score": "score", "scale": 1.0}
        for year in ("12", "13", "14", "15", "16")
    },
    "sentence-transformers/all-nli": {
        "subset": "pair-class",
        "s1": "premise",
        "s2": "hypothesis",
        "label": "label",
    },
    "stanfordnlp/snli": {"s1": "premise", "s2": "hypothesis", "label": "label"},
    "nyu-mll/multi_nli": {"s1": "premise", "s2": "hypothesis", "label": "label"},
    "nyu-mll/glue": {"subset": "mrpc", "s1": "sentence1", "s2": "sentence2", "label": "label"},
    "sentence-transformers/wikipedia-en-sentences": {"text": "sentence"},
}

_NLI_INDEX = {name: index for index, name in enumerate(NLI_LABELS)}


def _require_columns(ds: datasets.Dataset, columns: Iterable[str], name: str) -> None:
    for column in columns:
        if column not in ds.column_names:
            raise DataError(
                f"dataset {name!r} has no column {column!r} (columns: {', '.join(ds.column_names)})"
            )


def _text(value: object, column: str, row: int, name: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"dataset {name!r}, row {row}: column {column!r} holds {value!r}, not text")
    return value.strip()


def scored_pairs_from_dataset(
    ds: datasets.Dataset,
    *,
    s1: str = "sentence1",
    s2: str = "sentence2",
    score: str = "score",
    scale: float = 1.0,
    name: str = "dataset",
) -> list[ScoredPair]:
    """Rows of ``ds`` as ScoredPairs with ``score * scale``; rows whose score is None are dropped.

    Rows are numbered from 0 in error messages, as ``ds[i]`` indexes them.
    """
    _require_columns(ds, (s1, s2, score), name)
    pairs: list[ScoredPair] = []
    for row, (a, b, value) in enumerate(zip(ds[s1], ds[s2], ds[score], strict=True)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DataError(f"dataset {name!r}, row {row}: column {score!r} holds {value!r}, not a number")
        pairs.append(ScoredPair(_text(a, s1, row, name), _text(b, s2, row, name), float(value) * scale))
    return pairs


def _label_names(ds: datasets.Dataset, label: str) -> Sequence[str] | None:
    """The ClassLabel names of ``label``, or None for a plain column."""
    feature = ds.features.get(label) if ds.features is not None else None
    return getattr(feature, "names", None)


def nli_label_map(names: Sequence[str] | None) -> dict[int | str, int] | None:
    """Class id -> NLI_LABELS index when the ClassLabel names are exactly the three NLI classes."""
    if names is None or sorted(n.casefold() for n in names) != sorted(NLI_LABELS):
        return None
    return {index: _NLI_INDEX[n.casefold()] for index, n in enumerate(names)}


def labelled_pairs_from_dataset(
    ds: datasets.Dataset,
    *,
    s1: str = "sentence1",
    s2: str = "sentence2",
    label: str = "label",
    label_map: Mapping[int | str, int] | None = None,
    name: str = "dataset",
) -> list[LabelledPair]:
    """Rows of ``ds`` as LabelledPairs.

    Labels go through ``label_map`` when given. Without one, a ClassLabel whose names are the three NLI
    classes (any order) is remapped to NLI_LABELS indices, string labels naming NLI classes are looked
    up in NLI_LABELS, and other integer labels are kept as they are. Negative labels and None (the
    hub's "no gold label", e.g. SNLI's -1) are dropped; a label the map lacks is an error.
    """
    _require_columns(ds, (s1, s2, label), name)
    mapping = label_map if label_map is not None else nli_label_map(_label_names(ds, label))
    pairs: list[LabelledPair] = []
    for row, (a, b, value) in enumerate(zip(ds[s1], ds[s2], ds[label], strict=True)):
        if value is None or (isinstance(value, int) and value < 0):
            continue
        pairs.append(
            LabelledPair(_text(a, s1, row, name), _text(b, s2, row, name), _label(value, mapping, row, name))
        )
    return pairs


def _label(value: object, mapping: Mapping[int | str, int] | None, row: int, name: str) -> int:
    if mapping is not None:
        key = value.casefold() if isinstance(value, str) and value not in mapping else value
        if key in mapping:
            return mapping[key]
        raise DataError(
            f"dataset {name!r}, row {row}: label {value!r} is not in the label map {dict(mapping)}"
        )
    if isinstance(value, str):
        if value.casefold() in _NLI_INDEX:
            return _NLI_INDEX[value.casefold()]
        raise DataError(f"dataset {name!r}, row {row}: text label {value!r} needs a label_map")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise DataError(f"dataset {name!r}, row {row}: label {value!r} is not an integer")


def corpus_from_dataset(
    ds: datasets.Dataset, *, text: str = "text", title: str | None = None, name: str = "dataset"
) -> list[Document]:
    """Rows of ``ds`` as documents.

    Without ``title``, the rows are the sentences of one document called ``name`` (a sentence dataset
    such as wikipedia-en-sentences). With a ``title`` column, each row is a document whose sentences
    are the non-blank lines of its ``text``.
    """
    _require_columns(ds, (text,) if title is None else (text, title), name)
    if title is None:
        sentences = (_text(value, text, row, name) for row, value in enumerate(ds[text]))
        return [Document(title=name, sentences=tuple(s for s in sentences if s))]
    return [
        Document(
            title=_text(heading, title, row, name),
            sentences=tuple(s for line in _text(body, text, row, name).split("\n") if (s := line.strip())),
        )
        for row, (heading, body) in enumerate(zip(ds[title], ds[text], strict=True))
    ]


def _defaults(repo_id: str, given: Mapping[str, Any], fallback: Mapping[str, Any]) -> dict[str, Any]:
    """Explicit arguments, then HUB_DEFAULTS for the repository, then the generic fallback."""
    known = HUB_DEFAULTS.get(repo_id, {})
    return {
        key: given[key] if given.get(key) is not None else known.get(key, default)
        for key, default in fallback.items()
    }


def _load(repo_id: str, split: str, subset: str | None, revision: str | None) -> datasets.Dataset:
    import datasets

    try:
        return datasets.load_dataset(repo_id, subset, split=split, revision=revision)
    except Exception as exc:  # network, auth, unknown split: all user-fixable, keep the cause chained
        raise DataError(
            f"could not load {repo_id!r} (subset {subset!r}, split {split!r}) from the Hugging Face hub: "
            f"{exc}. Offline? Use the local files instead (SENTSWEEP_DATA or --data-dir)."
        ) from exc


def hub_scored_pairs(
    repo_id: str,
    split: str,
    *,
    s1: str | None = None,
    s2: str | None = None,
    score: str | None = None,
    scale: float | None = None,
    subset: str | None = None,
    revision: str | None = None,
) -> list[ScoredPair]:
    """Scored pairs from the hub, e.g. ``hub_scored_pairs("sentence-transformers/stsb", "test")`` (0-5).

    Unset arguments come from HUB_DEFAULTS, else ``sentence1``/``sentence2``/``score``/scale 1.
    """
    args = _defaults(
        repo_id,
        {"s1": s1, "s2": s2, "score": score, "scale": scale, "subset": subset},
        {"s1": "sentence1", "s2": "sentence2", "score": "score", "scale": 1.0, "subset": None},
    )
    ds = _load(repo_id, split, args.pop("subset"), revision)
    return scored_pairs_from_dataset(ds, **args, name=f"{repo_id}[{split}]")


def hub_labelled_pairs(
    repo_id: str,
    split: str,
    *,
    s1: str | None = None,
    s2: str | None = None,
    label: str | None = None,
    label_map: Mapping[int | str, int] | None = None,
    subset: str | None = None,
    revision: str | None = None,
) -> list[LabelledPair]:
    """Labelled pairs from the hub, e.g. ``hub_labelled_pairs("stanfordnlp/snli", "validation")``.

    NLI labels come back in NLI_LABELS order whatever the repository's order (see
    :func:`labelled_pairs_from_dataset`). Unset arguments come from HUB_DEFAULTS, else
    ``sentence1``/``sentence2``/``label``.
    """
    args = _defaults(
        repo_id,
        {"s1": s1, "s2": s2, "label": label, "subset": subset},
        {"s1": "sentence1", "s2": "sentence2", "label": "label", "subset": None},
    )
    ds = _load(repo_id, split, args.pop("subset"), revision)
    return labelled_pairs_from_dataset(ds, **args, label_map=label_map, name=f"{repo_id}[{split}]")


def hub_corpus(
    repo_id: str,
    split: str,
    text: str | None = None,
    *,
    title: str | None = None,
    subset: str | None = None,
    revision: str | None = None,
) -> list[Document]:
    """A corpus from the hub, e.g. ``hub_corpus("sentence-transformers/wikipedia-en-sentences", "train")``.

    ``text`` defaults from HUB_DEFAULTS, else ``"text"``; see :func:`corpus_from_dataset` for ``title``.
    """
    args = _defaults(repo_id, {"text": text, "subset": subset}, {"text": "text", "subset": None})
    ds = _load(repo_id, split, args.pop("subset"), revision)
    return corpus_from_dataset(ds, text=args["text"], title=title, name=repo_id)


def hub_files(
    repo_id: str,
    patterns: Sequence[str],
    *,
    repo_type: str = "dataset",
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> list[Path]:
    """Local paths of a repository's files matching ``patterns`` (globs), downloaded into the Hugging Face
    cache or found there: one named file through ``hf_hub_download``, globs through ``snapshot_download``
    (``allow_patterns``). With ``HF_HUB_OFFLINE=1`` both resolve from the cache alone
    (``<cache>/<type>s--<org>--<name>/snapshots/<commit>/...``, the commit read from ``refs/<revision>``).
    """
    from huggingface_hub import hf_hub_download, snapshot_download

    where = f"{repo_id!r} ({repo_type}, revision {revision or 'main'})"
    try:
        if len(patterns) == 1 and not any(c in patterns[0] for c in "*?["):
            return [Path(hf_hub_download(repo_id, patterns[0], repo_type=repo_type, revision=revision,
                                         cache_dir=cache_dir))]
        root = Path(snapshot_download(repo_id, repo_type=repo_type, revision=revision, cache_dir=cache_dir,
                                      allow_patterns=list(patterns)))
    except Exception as exc:  # offline without a cached copy, auth, unknown repo: all user-fixable
        raise DataError(f"could not get {', '.join(patterns)} of {where} from the Hugging Face hub: "
                        f"{type(exc).__name__}: {str(exc).rstrip('.')}. Offline? Give a local copy with --from PATH."
                        ) from exc
    found = sorted({path for pattern in patterns for path in root.glob(pattern) if path.is_file()})
    if not found:
        raise DataError(f"{where} has no file matching {', '.join(patterns)} (in {root})")
    return found
