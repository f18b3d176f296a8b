"""STS evaluation: Spearman, the "all" protocol, sts_avg7, task names, encode-once, real data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from sentsweep.data.records import ScoredPair
from sentsweep.errors import DataError
from sentsweep.evaluation import (
    AVG7_KEYS,
    Embedder,
    StsSet,
    evaluate_pairs,
    evaluate_sts,
    spearman,
    spearman_cosine,
    sts_avg7,
    subset_spearman,
)
from sentsweep.evaluation.sts import STS_YEARS, resolve_sts_tasks, score_sets


def test_spearman_matches_scipy_and_hand_ranks() -> None:
    pred = np.array([0.1, 0.4, 0.35, 0.8, 0.4])
    gold = np.array([1.0, 2.0, 3.0, 5.0, 2.5])
    # By hand: Pearson of the average ranks.
    rp, rg = rankdata(pred), rankdata(gold)
    by_hand = np.corrcoef(rp, rg)[0, 1] * 100
    assert spearman(pred, gold) == pytest.approx(by_hand)
    assert spearman(pred, gold) == pytest.approx(spearmanr(pred, gold).statistic * 100)


def test_spearman_without_ties_uses_the_d_squared_formula() -> None:
    pred = [0.2, 0.1, 0.9, 0.5]  # ranks 2 1 4 3
    gold = [1.0, 2.0, 3.0, 4.0]  # ranks 1 2 3 4
    # d = (1, -1, 1, -1): rho = 1 - 6 * 4 / (4 * 15) = 0.6
    assert spearman(pred, gold) == pytest.approx(60.0)


def test_spearman_constant_input_is_nan_and_length_mismatch_raises() -> None:
    assert math.isnan(spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="2 values but gold has 3"):
        spearman([1.0, 2.0], [1.0, 2.0, 3.0])


def test_spearman_cosine_uses_row_cosines() -> None:
    emb1 = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [3.0, 0.0]], dtype=np.float32)
    emb2 = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    cos = [1.0, 1 / math.sqrt(2), 0.0, -1.0]  # scale of emb1 does not matter
    gold = [4.0, 5.0, 1.0, 0.0]
    assert spearman_cosine(emb1, emb2, gold) == pytest.approx(spearmanr(cos, gold).statistic * 100)
    assert spearman_cosine(emb1, emb2, gold) == pytest.approx(80.0)  # d = (1, -1, 0, 0)


def test_all_protocol_concatenates_subsets_and_differs_from_the_mean() -> None:
    # Each subset on its own is perfectly (anti-)correlated: +100 and -100, mean 0.
    subsets = {
        "A": ([0.1, 0.2, 0.3], [0.0, 1.0, 2.0]),
        "B": ([0.4, 0.5, 0.6], [5.0, 4.0, 3.0]),
    }
    out = subset_spearman(subsets)
    assert out["A"] == pytest.approx(100.0)
    assert out["B"] == pytest.approx(-100.0)
    assert out["mean"] == pytest.approx(0.0)
    assert out["wmean"] == pytest.approx(0.0)
    # Concatenated: predicted ranks 1..6, gold ranks (1, 2, 3, 6, 5, 4); d = (0, 0, 0, 2, 0, -2),
    # sum d^2 = 8, rho = 1 - 6 * 8 / (6 * 35) = 27/35.
    assert out["all"] == pytest.approx(100 * 27 / 35)
    assert out["all"] != pytest.approx(out["mean"])


def test_wmean_weights_by_subset_size() -> None:
    subsets = {"small": ([0.1, 0.2], [1.0, 2.0]), "big": ([0.1, 0.2, 0.3, 0.4], [4.0, 3.0, 2.0, 1.0])}
    out = subset_spearman(subsets)
    assert out["mean"] == pytest.approx(0.0)
    assert out["wmean"] == pytest.approx((2 * 100 + 4 * -100) / 6)


def test_sts_avg7_only_when_all_seven_are_present() -> None:
    metrics = {key: float(i) for i, key in enumerate(AVG7_KEYS)}
    assert sts_avg7(metrics) == pytest.approx(3.0)
    del metrics["sickr_test"]
    assert sts_avg7(metrics) is None


def test_task_names_expand_and_dedupe() -> None:
    assert resolve_sts_tasks(["stsb"]) == [("stsb", "dev"), ("stsb", "test")]
    assert resolve_sts_tasks("stsb_test, stsb, sickr,sickr_test") == [
        ("stsb", "test"),
        ("stsb", "dev"),
        ("sickr", "test"),
    ]
    assert resolve_sts_tasks(["sts12"]) == [("sts12", "all")]


def test_unknown_task_lists_valid_names(embedder: Embedder) -> None:
    with pytest.raises(ValueError, match="unknown STS task.*'sts17'.*valid names: sts12, sts13"):
        evaluate_sts(embedder, ["stsb", "sts17"])


def _pairs(*rows: tuple[str, str, float]) -> list[ScoredPair]:
    return [ScoredPair(a, b, s) for a, b, s in rows]


def test_evaluate_pairs_encodes_each_sentence_once(embedder) -> None:
    pairs = _pairs(
        ("a man plays the guitar", "a man plays the guitar loudly", 4.8),
        ("a man plays the guitar", "a woman sings a song", 0.5),
        ("dogs run in the park", "a dog runs in the park", 1.0),
        ("cats sleep all day", "a man plays the guitar", 0.2),
    )
    value = evaluate_pairs(embedder, pairs, batch_size=2)
    assert sorted(embedder.encoded) == sorted({s for p in pairs for s in (p.s1, p.s2)})
    assert all(len(batch) <= 2 for batch in embedder.calls)
    enc = {s: embedder.encode([s])[0].astype(np.float64) for p in pairs for s in (p.s1, p.s2)}
    cos = [enc[p.s1] @ enc[p.s2] / np.linalg.norm(enc[p.s1]) / np.linalg.norm(enc[p.s2]) for p in pairs]
    assert len({round(c, 6) for c in cos}) == 4  # no ties: the order is unambiguous
    # predicted order (0.91, 0.17, 0.62, 0.00) -> ranks 4 2 3 1; gold ranks 4 2 3 1
    assert value == pytest.approx(spearmanr(cos, [p.score for p in pairs]).statistic * 100)
    assert value == pytest.approx(100.0)


def _seven_sets() -> list[StsSet]:
    """Seven tiny headline sets whose predicted cosines are all distinct (so every Spearman is defined)."""
    shared = "the same sentence appears in every task"

    def three(tag: str) -> list[ScoredPair]:
        return _pairs(
            (shared, f"{shared} {tag}", 4.0),
            (f"red blue {tag}", f"red green {tag} yellow", 3.0),
            (f"one two {tag}", "nothing in common here", 1.0),
        )

    sets = [StsSet(t, "all", {"first": three(t + "a"), "second": three(t + "b")}) for t in STS_YEARS]
    sets.append(StsSet("stsb", "dev", {"dev": three("dev")}))
    sets.append(StsSet("stsb", "test", {"test": three("test")}))
    sets.append(StsSet("sickr", "test", {"test": three("sick")}))
    return sets


def test_score_sets_keys_table_avg7_and_encode_once(embedder) -> None:
    sets = _seven_sets()
    result = score_sets(embedder, sets)
    expected = {
        "sts12_all",
        "sts12_mean",
        "sts12_wmean",
        "sts12_first",
        "sts12_second",
        "stsb_dev",
        "sts_avg7",
    }
    assert expected <= set(result.metrics)
    assert not any(math.isnan(v) for v in result.metrics.values())
    assert result.metrics["sts_avg7"] == pytest.approx(np.mean([result.metrics[k] for k in AVG7_KEYS]))
    assert list(result.table.columns) == ["task", "subset", "n_pairs", "spearman"]
    row = result.table.query("task == 'sts12' and subset == 'all'").iloc[0]
    assert row.n_pairs == 6 and row.spearman == pytest.approx(result.metrics["sts12_all"])
    # every table row's metric key is task_subset
    for r in result.table.itertuples():
        assert result.metrics[f"{r.task}_{r.subset}"] == pytest.approx(r.spearman, nan_ok=True)
    # sentences shared between tasks are encoded exactly once
    assert len(embedder.encoded) == len(set(embedder.encoded))
    assert embedder.encoded.count("the same sentence appears in every task") == 1


def test_no_avg7_without_all_seven(embedder) -> None:
    result = score_sets(embedder, _seven_sets()[:-1])
    assert "sts_avg7" not in result.metrics
    assert "sts" not in set(result.table.task)


def test_evaluate_sts_on_the_bundled_or_shared_data(embedder, data_module, shared_data) -> None:
    result = evaluate_sts(embedder, ["sts12", "stsb_test", "sickr"], data_dir=shared_data)
    assert {"sts12_all", "sts12_MSRpar", "stsb_test", "sickr_test"} <= set(result.metrics)
    assert "stsb_dev" not in result.metrics and "sts_avg7" not in result.metrics
    n = dict(zip(result.table.task + "_" + result.table.subset, result.table.n_pairs, strict=True))
    assert n["stsb_test"] == 1379 and n["sickr_test"] == 4927 and n["sts12_all"] == 3108
    assert result.info["data_is_sample"] is False
    # a bag of words correlates positively with STS gold
    assert 20 < result.metrics["stsb_test"] < 90


def test_evaluate_sts_all_seven_on_the_sample(embedder, data_module) -> None:
    source = data_module.resolve_data_dir(None)
    try:
        result = evaluate_sts(embedder, data_dir=source)
    except DataError as err:
        pytest.skip(f"the bundled sample lacks an STS task: {err}")
    assert "sts_avg7" in result.metrics
    assert result.table.iloc[-1].task == "sts"


def test_a_dev_set_cut_to_max_pairs_is_a_seeded_sample_across_the_file(shared_data) -> None:
    """STS-B dev is sorted by genre (625 caption pairs first): 100 pairs are drawn from the whole file, the same
    ones every time, in file order; the protocol says so."""
    from sentsweep.evaluation.sts import StsEvaluator, load_sts_sets, sample_indices

    (whole,) = load_sts_sets(["stsb_dev"], shared_data)
    pairs = whole.subsets["dev"]
    evaluator = StsEvaluator(["stsb_dev"], shared_data, max_pairs=100)
    (cut,) = evaluator.sets
    kept = cut.subsets["dev"]
    positions = [pairs.index(pair) for pair in kept]
    assert len(kept) == 100 and positions == sorted(positions) and len(set(positions)) == 100
    assert sum(p >= 625 for p in positions) > 40  # forums and news too, not captions alone
    assert [p.s1 for p in StsEvaluator(["stsb_dev"], shared_data, max_pairs=100).sets[0].subsets["dev"]] == [
        p.s1 for p in kept]
    assert StsEvaluator(["stsb_dev"], shared_data, max_pairs=5000).sets[0].subsets["dev"] == pairs
    assert evaluator.info["sts_max_pairs"] == 100 and evaluator.info["sts_sample_seed"] == 0
    assert sample_indices(10, 4) == [3, 4, 7, 9]  # a hash's order: the same rows with any numpy
