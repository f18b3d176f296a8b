"""Hub conversions on in-memory datasets (the hub itself needs internet and is never called here)."""

from __future__ import annotations

import datasets
import pytest

from sentsweep.data import (
    HUB_DEFAULTS,
    NLI_LABELS,
    Document,
    LabelledPair,
    ScoredPair,
    corpus_from_dataset,
    labelled_pairs_from_dataset,
    scored_pairs_from_dataset,
)
from sentsweep.data.hub import _defaults
from sentsweep.errors import DataError


def _nli(labels: list[int], names: list[str]) -> datasets.Dataset:
    features = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=names),
        }
    )
    n = len(labels)
    return datasets.Dataset.from_dict(
        {"premise": [f"p{i}" for i in range(n)], "hypothesis": [f"h{i}" for i in range(n)], "label": labels},
        features=features,
    )


def test_scored_pairs_with_scale() -> None:
    ds = datasets.Dataset.from_dict(
        {"sentence1": [" A man sings. ", "x"], "sentence2": ["A man is singing.", "y"], "score": [0.76, 0.1]}
    )
    pairs = scored_pairs_from_dataset(ds, scale=5.0)
    assert pairs[0] == ScoredPair("A man sings.", "A man is singing.", pytest.approx(3.8))
    assert all(isinstance(p, ScoredPair) for p in pairs)


def test_scored_pairs_drop_missing_scores_and_reject_text_scores() -> None:
    ds = datasets.Dataset.from_dict({"a": ["x", "y"], "b": ["u", "v"], "s": [None, 2.0]})
    assert scored_pairs_from_dataset(ds, s1="a", s2="b", score="s") == [ScoredPair("y", "v", 2.0)]
    bad = datasets.Dataset.from_dict({"a": ["x"], "b": ["u"], "s": ["high"]})
    with pytest.raises(DataError, match="row 0: column 's' holds 'high', not a number"):
        scored_pairs_from_dataset(bad, s1="a", s2="b", score="s", name="demo")


def test_missing_column_names_column_and_dataset() -> None:
    ds = datasets.Dataset.from_dict({"sentence1": ["x"], "sentence2": ["y"], "label": [1.0]})
    with pytest.raises(DataError, match=r"dataset 'org/stsb\[test\]' has no column 'score'"):
        scored_pairs_from_dataset(ds, name="org/stsb[test]")
    with pytest.raises(DataError, match="has no column 'premise'"):
        labelled_pairs_from_dataset(ds, s1="premise", name="x")
    with pytest.raises(DataError, match="has no column 'text'"):
        corpus_from_dataset(ds, name="x")


def test_hub_nli_order_is_remapped_and_unlabelled_rows_dropped() -> None:
    # SNLI / all-nli on the hub: 0 entailment, 1 neutral, 2 contradiction; -1 = no gold label.
    ds = _nli([0, 1, 2, -1], ["entailment", "neutral", "contradiction"])
    pairs = labelled_pairs_from_dataset(ds, s1="premise", s2="hypothesis")
    assert [NLI_LABELS[p.label] for p in pairs] == ["entailment", "neutral", "contradiction"]
    assert pairs[0] == LabelledPair("p0", "h0", NLI_LABELS.index("entailment"))


def test_other_class_labels_and_plain_ints_are_kept() -> None:
    ds = _nli([0, 1], ["not_equivalent", "equivalent"])
    assert [p.label for p in labelled_pairs_from_dataset(ds, s1="premise", s2="hypothesis")] == [0, 1]


def test_label_map_and_text_labels() -> None:
    ds = datasets.Dataset.from_dict(
        {"sentence1": ["a", "b", "c"], "sentence2": ["d", "e", "f"], "label": ["ENTAILMENT", "neutral", "x"]}
    )
    with pytest.raises(DataError, match="row 2: text label 'x' needs a label_map"):
        labelled_pairs_from_dataset(ds)
    mapping = {"entailment": 2, "neutral": 1, "x": 0}
    assert [p.label for p in labelled_pairs_from_dataset(ds, label_map=mapping)] == [2, 1, 0]
    with pytest.raises(DataError, match="label 'neutral' is not in the label map"):
        labelled_pairs_from_dataset(ds, label_map={"entailment": 2})


def test_corpus_from_sentence_rows_and_from_titled_rows() -> None:
    sentences = datasets.Dataset.from_dict({"sentence": ["One.", " ", "Two."]})
    assert corpus_from_dataset(sentences, text="sentence", name="wiki") == [
        Document("wiki", ("One.", "Two."))
    ]
    articles = datasets.Dataset.from_dict({"title": ["A", "B"], "text": ["One.\nTwo.\n", "Three."]})
    assert corpus_from_dataset(articles, title="title") == [
        Document("A", ("One.", "Two.")),
        Document("B", ("Three.",)),
    ]


def test_defaults_per_repository() -> None:
    fallback = {"s1": "sentence1", "score": "score", "scale": 1.0, "subset": None}
    stsb = _defaults("sentence-transformers/stsb", {"scale": None}, fallback)
    assert stsb == {"s1": "sentence1", "score": "score", "scale": 5.0, "subset": None}
    assert _defaults("sentence-transformers/stsb", {"scale": 1.0}, fallback)["scale"] == 1.0
    nli = _defaults("sentence-transformers/all-nli", {}, fallback)
    assert (nli["s1"], nli["subset"]) == ("premise", "pair-class")
    assert _defaults("someone/else", {}, fallback) == fallback
    assert all(isinstance(kwargs, dict) for kwargs in HUB_DEFAULTS.values())
