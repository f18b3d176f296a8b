"""Data loaders: STS, SICK, SentEval tasks, NLI and corpora, from local files or the Hugging Face hub.

Local files live in a data directory in SentEval's layout (``senteval/...``, ``corpora/...``), picked
by :func:`resolve_data_dir`: an explicit ``data_dir`` argument, else ``SENTSWEEP_DATA``, else the small
sample bundled with the package. Every loader returns the plain records of
:mod:`sentsweep.data.records`; every malformed or missing file raises
:class:`~sentsweep.errors.DataError` naming the file and line.

>>> from sentsweep.data import scored_pairs
>>> len(scored_pairs("stsb", "dev")) > 0   # the bundled sample when SENTSWEEP_DATA is unset
True
"""

from __future__ import annotations

from sentsweep.data.corpora import corpus, training_documents
from sentsweep.data.hub import (
    HUB_DEFAULTS,
    corpus_from_dataset,
    hub_corpus,
    hub_labelled_pairs,
    hub_scored_pairs,
    labelled_pairs_from_dataset,
    scored_pairs_from_dataset,
)
from sentsweep.data.pairs import labelled_pairs, scored_pairs
from sentsweep.data.records import NLI_LABELS, Document, LabelledPair, LabelledSentence, ScoredPair
from sentsweep.data.registry import DatasetInfo, list_datasets
from sentsweep.data.sentences import TREC_LABELS, labelled_sentences
from sentsweep.data.source import SAMPLE_DIR, DataSource, resolve_data_dir
from sentsweep.data.sts import STS_YEARS, sts_subsets

__all__ = [
    "HUB_DEFAULTS",
    "NLI_LABELS",
    "SAMPLE_DIR",
    "STS_YEARS",
    "TREC_LABELS",
    "DataSource",
    "DatasetInfo",
    "Document",
    "LabelledPair",
    "LabelledSentence",
    "ScoredPair",
    "corpus",
    "corpus_from_dataset",
    "hub_corpus",
    "hub_labelled_pairs",
    "hub_scored_pairs",
    "labelled_pairs",
    "labelled_pairs_from_dataset",
    "labelled_sentences",
    "list_datasets",
    "resolve_data_dir",
    "scored_pairs",
    "scored_pairs_from_dataset",
    "sts_subsets",
    "training_documents",
]
