"""Every named dataset the loaders know: its kind, splits and files relative to the data root.

The registry is the single source of truth for paths: the loaders, ``tools/make_sample.py``
and ``list_datasets()`` all read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sentsweep.data.source import DataSource, resolve_data_dir
from sentsweep.errors import DataError

#: How a config names a dataset staged by ``sentsweep data prepare`` (:mod:`sentsweep.data.prepared`).
PREPARED_PREFIX = "prepared:"

#: The split name of datasets that have no splits (MR, CR, SUBJ, MPQA, the corpora).
ALL = "all"

KINDS: tuple[str, ...] = ("sts-year", "scored-pairs", "labelled-pairs", "labelled-sentences", "corpus")


@dataclass(frozen=True)
class DatasetInfo:
    """One named dataset.

    ``files`` maps each split to its files, relative to the data root, in the order the parser reads
    them: for an STS year, ``STS.input.X.txt`` then ``STS.gs.X.txt`` for each subset X; for two-file
    sentence tasks, the positive (label 1) file then the negative (label 0) file; for SNLI, ``s1``,
    ``s2``, ``labels``. ``format`` names the parser.
    """

    name: str
    kind: str
    splits: tuple[str, ...]
    files: Mapping[str, tuple[str, ...]]
    format: str
    description: str
    licence: str
    how_to_get: str = field(default="", compare=False)
    #: Splits staged by ``sentsweep data prepare`` rather than read from the data directory: split ->
    #: prepared dataset name (:mod:`sentsweep.data.catalogue`).
    prepared: Mapping[str, str] = field(default_factory=dict, compare=False)


_STS_SUBSETS: dict[str, tuple[str, tuple[str, ...]]] = {
    # SentEval's subsets per year, in its order (STS13's licensed SMT subset is not part of it).
    "sts12": ("STS12-en-test", ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews")),
    "sts13": ("STS13-en-test", ("FNWN", "headlines", "OnWN")),
    "sts14": ("STS14-en-test", ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news")),
    "sts15": ("STS15-en-test", ("answers-forums", "answers-students", "belief", "headlines", "images")),
    "sts16": (
        "STS16-en-test",
        ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
    ),
}


def _sts_year(name: str) -> DatasetInfo:
    folder, subsets = _STS_SUBSETS[name]
    files = tuple(
        f"senteval/STS/{folder}/STS.{part}.{subset}.txt" for subset in subsets for part in ("input", "gs")
    )
    return DatasetInfo(
        name=name,
        kind="sts-year",
        splits=("test",),
        files={"test": files},
        format="sts-year",
        description=f"SemEval 20{name[3:]} STS test ({', '.join(subsets)}); gold 0-5, empty = unscored",
        licence="see 00-readme.txt / LICENSE.txt in the year's folder",
    )


def _split_files(pattern: str, splits: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    return {split: (pattern.format(stem),) for split, stem in splits.items()}


_SICK = _split_files(
    "senteval/SICK/{}",
    {"train": "SICK_train.txt", "trial": "SICK_trial.txt", "test": "SICK_test_annotated.txt"},
)
_NLI = "labels contradiction 0, neutral 1, entailment 2 (sentsweep.data.NLI_LABELS)"
_SST_HINT = (
    "SST2 is not in the shared data: run SentEval's data/downstream/get_transfer_data.bash and copy "
    "downstream/SST/binary into <data dir>/senteval/SST/binary"
)

_DATASETS: tuple[DatasetInfo, ...] = (
    *(_sts_year(name) for name in _STS_SUBSETS),
    DatasetInfo(
        name="stsb",
        kind="scored-pairs",
        splits=("train", "dev", "test"),
        files=_split_files("senteval/STS/STSBenchmark/sts-{}.csv", {s: s for s in ("train", "dev", "test")}),
        format="stsb",
        description="STS Benchmark; gold 0-5",
        licence="CC BY-SA 4.0 (scores); see STSBenchmark/LICENSE.txt",
    ),
    DatasetInfo(
        name="sickr",
        kind="scored-pairs",
        splits=("train", "trial", "test"),
        files=_SICK,
        format="sick-relatedness",
        description="SICK relatedness; gold 1-5",
        licence="CC BY-NC-SA 3.0",
    ),
    DatasetInfo(
        name="mrpc",
        kind="labelled-pairs",
        splits=("train", "test"),
        files=_split_files("senteval/MRPC/msr_paraphrase_{}.txt", {"train": "train", "test": "test"}),
        format="mrpc",
        description="Microsoft Research Paraphrase Corpus; label 1 = paraphrase",
        licence="Microsoft research licence",
    ),
    DatasetInfo(
        name="snli",
        kind="labelled-pairs",
        splits=("dev", "test"),
        files={
            split: tuple(f"senteval/SNLI/{part}.{split}" for part in ("s1", "s2", "labels"))
            for split in ("dev", "test")
        },
        format="snli",
        description=f"SNLI dev and test; train (SNLI) and train+mnli (SNLI then MultiNLI) once prepared; {_NLI}",
        licence="CC BY-SA 4.0",
        prepared={"train": "snli-train", "train+mnli": "nli-train"},
    ),
    DatasetInfo(
        name="sick-nli",
        kind="labelled-pairs",
        splits=("train", "trial", "test"),
        files=_SICK,
        format="sick-entailment",
        description=f"SICK entailment judgments; {_NLI}",
        licence="CC BY-NC-SA 3.0",
    ),
    DatasetInfo(
        name="mr",
        kind="labelled-sentences",
        splits=(ALL,),
        files={ALL: ("senteval/MR/rt-polarity.pos", "senteval/MR/rt-polarity.neg")},
        format="two-files",
        description="movie-review polarity; pos 1, neg 0",
        licence="research use",
    ),
    DatasetInfo(
        name="cr",
        kind="labelled-sentences",
        splits=(ALL,),
        files={ALL: ("senteval/CR/custrev.pos", "senteval/CR/custrev.neg")},
        format="two-files",
        description="customer reviews; pos 1, neg 0",
        licence="research use",
    ),
    DatasetInfo(
        name="subj",
        kind="labelled-sentences",
        splits=(ALL,),
        files={ALL: ("senteval/SUBJ/subj.subjective", "senteval/SUBJ/subj.objective")},
        format="two-files",
        description="subjectivity; subjective 1, objective 0",
        licence="research use",
    ),
    DatasetInfo(
        name="mpqa",
        kind="labelled-sentences",
        splits=(ALL,),
        files={ALL: ("senteval/MPQA/mpqa.pos", "senteval/MPQA/mpqa.neg")},
        format="two-files",
        description="MPQA opinion polarity; pos 1, neg 0",
        licence="research use",
    ),
    DatasetInfo(
        name="trec",
        kind="labelled-sentences",
        splits=("train", "test"),
        files=_split_files("senteval/TREC/{}", {"train": "train_5500.label", "test": "TREC_10.label"}),
        format="trec",
        description="TREC question type; coarse label index in sentsweep.data.TREC_LABELS",
        licence="research use",
    ),
    DatasetInfo(
        name="sst2",
        kind="labelled-sentences",
        splits=("train", "dev", "test"),
        files=_split_files("senteval/SST/binary/sentiment-{}", {s: s for s in ("train", "dev", "test")}),
        format="sst",
        description="Stanford Sentiment Treebank, binary; 'sentence<TAB>label'",
        licence="research use",
        how_to_get=_SST_HINT,
    ),
    DatasetInfo(
        name="enwiki",
        kind="corpus",
        splits=(ALL,),
        files={ALL: ("corpora/enwiki_gensim_sample.txt",)},
        format="titled-documents",
        description="English Wikipedia sentences, one article a document ('# Title' headers)",
        licence="CC BY-SA",
    ),
    DatasetInfo(
        name="brown",
        kind="corpus",
        splits=(ALL,),
        files={ALL: ("corpora/brown_sentences.txt",)},
        format="titled-documents",
        description="Brown corpus sentences, tokenized ('# fileid category' headers)",
        licence="Brown corpus licence",
    ),
    *(
        DatasetInfo(
            name=f"ptb-{split}",
            kind="corpus",
            splits=(ALL,),
            files={ALL: (f"corpora/ptb_lm_{split}.txt",)},
            format="one-document",
            description=f"Penn Treebank language-model text, {split} split (one document)",
            licence="research use",
        )
        for split in ("train", "valid", "test")
    ),
)

REGISTRY: Mapping[str, DatasetInfo] = {info.name: info for info in _DATASETS}


def list_datasets() -> list[DatasetInfo]:
    """Every registered dataset, grouped by kind in the order of :data:`KINDS`."""
    return sorted(_DATASETS, key=lambda info: KINDS.index(info.kind))


def dataset_info(name: str, kind: str) -> DatasetInfo:
    """The registered dataset ``name`` of ``kind``; a DataError listing the choices otherwise."""
    info = REGISTRY.get(name)
    if info is not None and info.kind == kind:
        return info
    known = ", ".join(i.name for i in _DATASETS if i.kind == kind)
    hint = f" ('{name}' is a {info.kind} dataset)" if info is not None else ""
    raise DataError(f"unknown {kind} dataset {name!r}{hint}; known: {known}")


def prepared_split(name: str, kind: str, split: str | None) -> str | None:
    """The ``prepared:`` reference a split reads, or None for a split in the data directory.

    ``split`` may itself be a reference (``prepared:nli-train``) or a split the dataset stages
    (:attr:`DatasetInfo.prepared`: SNLI's ``train`` and ``train+mnli``).
    """
    if split is not None and split.startswith(PREPARED_PREFIX):
        dataset_info(name, kind)
        return split
    staged = dataset_info(name, kind).prepared.get(split or "")
    return PREPARED_PREFIX + staged if staged else None


def split_files(info: DatasetInfo, split: str | None) -> tuple[str, ...]:
    """The files of ``split`` (None means the only split, for datasets that have one)."""
    if split is None:
        if len(info.splits) != 1:
            raise DataError(f"{info.name} has splits {', '.join(info.splits)}: name one")
        split = info.splits[0]
    if split not in info.files:
        staged = f" (prepared: {', '.join(info.prepared)}, or prepared:NAME)" if info.prepared else ""
        raise DataError(f"{info.name} has no split {split!r}; splits: {', '.join(info.splits)}{staged}")
    return info.files[split]


def locate(
    name: str, kind: str, split: str | None, data_dir: str | Path | DataSource | None
) -> tuple[DatasetInfo, tuple[Path, ...]]:
    """The dataset's info and the absolute paths of the split's files, each checked to exist."""
    info = dataset_info(name, kind)
    files = split_files(info, split)
    source = resolve_data_dir(data_dir)
    return info, tuple(source.require(file, hint=info.how_to_get) for file in files)
