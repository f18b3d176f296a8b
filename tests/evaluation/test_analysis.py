"""Rank-based error analysis (SNCSE eq. 11) and similarity distributions (SNCSE Figure 4)."""

from __future__ import annotations

import numpy as np
import pytest

from sentsweep.data.records import ScoredPair
from sentsweep.evaluation import (
    compare_distributions,
    random_partners,
    rank_errors,
    similarity_distribution,
    summary,
    worst_pairs,
)


def test_rank_errors_by_hand_on_four_pairs_with_ties() -> None:
    pairs = [
        ScoredPair("a", "b", 1.0),
        ScoredPair("c", "d", 2.0),
        ScoredPair("e", "f", 2.0),
        ScoredPair("g", "h", 4.0),
    ]
    predicted = [0.1, 0.9, 0.5, 0.5]
    # gold ranks (1, 2.5, 2.5, 4); predicted ranks (1, 4, 2.5, 2.5); errors (0, 1.5, 0, 1.5)
    out = rank_errors(pairs, predicted, k=None)
    assert list(out.columns) == ["s1", "s2", "gold", "predicted", "gold_rank", "pred_rank", "rank_error"]
    assert list(out.index) == [1, 3, 0, 2]  # worst first, equal errors in input order
    assert list(out.rank_error) == [1.5, 1.5, 0.0, 0.0]
    assert out.loc[1, "gold_rank"] == 2.5 and out.loc[1, "pred_rank"] == 4.0
    assert out.loc[3, "gold_rank"] == 4.0 and out.loc[3, "pred_rank"] == 2.5
    top = rank_errors(pairs, predicted, k=2)
    assert list(top.s1) == ["c", "g"]


def test_rank_errors_reversed_order() -> None:
    pairs = [ScoredPair(str(i), str(i), float(i)) for i in range(4)]
    out = rank_errors(pairs, [4.0, 3.0, 2.0, 1.0], k=1)
    assert len(out) == 1 and out.iloc[0].rank_error == 3.0 and out.index[0] == 0
    with pytest.raises(ValueError, match="4 pairs but 3"):
        rank_errors(pairs, [1.0, 2.0, 3.0])


def test_similarity_distribution_and_summary(embedder) -> None:
    sents = ["a man plays the guitar", "a dog runs in the park", "the cat sleeps all day"]
    same = similarity_distribution(embedder, sents, sents)
    np.testing.assert_allclose(same, 1.0, atol=1e-6)
    partners = random_partners(sents, seed=1)
    assert sorted(partners) == sorted(sents) and all(a != b for a, b in zip(sents, partners, strict=True))
    other = similarity_distribution(embedder, sents, partners)
    assert other.shape == (3,) and (other < 0.99).all()

    stats = summary([0.0, 0.25, 0.5, 0.75, 1.0])
    assert stats["n"] == 5 and stats["mean"] == 0.5 and stats["median"] == 0.5
    assert stats["q25"] == 0.25 and stats["min"] == 0.0 and stats["max"] == 1.0
    table = compare_distributions({"same": same, "random": other})
    assert list(table.index) == ["same", "random"] and table.loc["same", "mean"] == pytest.approx(1.0)


def test_random_partners_never_pairs_a_position_with_itself() -> None:
    sents = [f"s{i}" for i in range(50)]
    for seed in range(5):
        partners = random_partners(sents, seed)
        assert sorted(partners) == sorted(sents)
        assert all(a != b for a, b in zip(sents, partners, strict=True))


def test_worst_pairs_on_shared_data(embedder, data_module, shared_data) -> None:
    out = worst_pairs(embedder, ["sts13", "stsb_test"], data_dir=shared_data, k=3)
    assert list(out.task) == ["sts13_all"] * 3 + ["stsb_test"] * 3
    assert set(out.subset[:3]) <= {"FNWN", "headlines", "OnWN"}
    assert (out.rank_error.diff().fillna(0)[[1, 2, 4, 5]] <= 0).all()  # sorted within each task
    assert out.rank_error.iloc[0] > 500  # a bag of words makes big mistakes on 1500 pairs


def test_figure4_sentences_come_from_all_seven_sts_tasks(shared_data) -> None:
    """SNCSE's Figure 4: 5000 sentences drawn from the STS tasks (STS12-16, STS-B test, SICK-R test), seeded."""
    from sentsweep.evaluation.analysis import FIGURE4_SENTENCES, FIGURE4_STS_SETS, sample_sts_sentences
    from sentsweep.evaluation.sts import load_sts_sets

    sample = sample_sts_sentences(seed=42, data_dir=shared_data)
    assert len(sample) == FIGURE4_SENTENCES == len(set(sample))
    assert sample == sample_sts_sentences(seed=42, data_dir=shared_data)
    assert sample != sample_sts_sentences(seed=7, data_dir=shared_data)
    sets = load_sts_sets(FIGURE4_STS_SETS, shared_data)
    by_set = {st.key: {s for p in st.pairs for s in (p.s1, p.s2)} for st in sets}
    assert sorted(by_set) == sorted(["sts12_all", "sts13_all", "sts14_all", "sts15_all", "sts16_all", "stsb_test",
                                     "sickr_test"])
    chosen = set(sample)
    assert all(chosen & sentences for sentences in by_set.values())  # every task contributes
    assert chosen <= set().union(*by_set.values())
    assert len(chosen & by_set["stsb_test"]) < 1000  # not STS-B test alone (2551 unique sentences there)


def test_figure4_sample_keeps_every_sentence_when_there_are_fewer(data_module) -> None:
    from sentsweep.evaluation.analysis import sample_sts_sentences

    few = sample_sts_sentences(10**7, seed=0, tasks="stsb_test")
    assert len(few) == len(set(few)) > 10
    assert sample_sts_sentences(5, seed=0, tasks="stsb_test") == sample_sts_sentences(5, seed=0, tasks="stsb_test")
    with pytest.raises(ValueError, match="n must be"):
        sample_sts_sentences(0)
