"""SentEval transfer tasks: the reg -> C mapping, features, the three protocols, skipping and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from sentsweep.errors import DataError
from sentsweep.evaluation import (
    REG_GRID,
    evaluate_senteval,
    kfold_test_accuracy,
    nested_cv_accuracy,
    pair_features,
    reg_to_c,
    select_reg,
    split_test_accuracy,
)


def test_reg_to_c_matches_weight_decay_on_the_mean_loss() -> None:
    """At sklearn's optimum with C = 1/(reg n), the gradient of mean loss + reg/2 ||w||^2 vanishes."""
    rng = np.random.default_rng(0)
    n, d, reg = 300, 5, 1e-2
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(int)
    model = LogisticRegression(C=reg_to_c(reg, n), tol=1e-12, max_iter=10_000).fit(X, y)
    w, b = model.coef_[0], model.intercept_[0]
    p = 1 / (1 + np.exp(-(X @ w + b)))
    grad_w = X.T @ (p - y) / n + reg * w
    grad_b = np.mean(p - y)  # the intercept is not penalised
    assert np.abs(grad_w).max() < 1e-6 and abs(grad_b) < 1e-6
    assert reg_to_c(1e-3, 500) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        reg_to_c(0.0, 10)


def test_pair_features_layout() -> None:
    u = np.array([[1.0, -2.0], [0.5, 0.0]])
    v = np.array([[3.0, 1.0], [0.5, 2.0]])
    full = pair_features(u, v)
    assert full.dtype == np.float32 and full.shape == (2, 8)
    np.testing.assert_allclose(full[0], [1, -2, 3, 1, 2, 3, 3, -2])
    np.testing.assert_allclose(full[1], [0.5, 0, 0.5, 2, 0, 2, 0.25, 0])
    np.testing.assert_allclose(pair_features(u, v, include_uv=False), full[:, 4:])
    with pytest.raises(ValueError):
        pair_features(u, v[:1])


def test_nested_cv_on_separable_toy_embeddings(embedder, polarity) -> None:
    texts, y = polarity(120)
    X = embedder.encode(texts).astype(np.float64)
    res = nested_cv_accuracy(X, y, kfold=3, inner_kfold=2, seed=1)
    assert res["acc"] > 95 and res["dev_acc"] > 90
    assert len(res["regs"]) == 3 and set(res["regs"]) <= set(REG_GRID)
    # deterministic given the seed
    assert nested_cv_accuracy(X, y, kfold=3, inner_kfold=2, seed=1) == res


def test_select_reg_ties_go_to_the_first_grid_entry() -> None:
    rng = np.random.default_rng(0)
    y = np.arange(60) % 2
    X = np.c_[(2 * y - 1) * 5.0, rng.normal(size=(60, 3))]  # separable by a wide margin at every reg
    reg, acc = select_reg(X, y, k=3, regs=(1e-4, 1e-5))
    assert (reg, acc) == (1e-4, pytest.approx(100.0))


def test_kfold_and_split_protocols_multiclass() -> None:
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, 8)) * 3
    y = np.repeat(np.arange(3), 40)
    X = centres[y] + rng.normal(size=(120, 8))
    tr, te = np.arange(120) % 4 != 0, np.arange(120) % 4 == 0
    res = kfold_test_accuracy(X[tr], y[tr], X[te], y[te], kfold=3)
    assert res["acc"] > 90 and res["y_pred"].shape == (30,)
    dv = np.arange(120) % 4 == 1
    tr2 = tr & ~dv
    res = split_test_accuracy(X[tr2], y[tr2], X[dv], y[dv], X[te], y[te])
    assert res["acc"] > 90 and len(res["regs"]) == 1


def test_too_many_folds_for_a_class_is_a_data_error() -> None:
    X = np.eye(6)
    y = np.array([0, 0, 0, 0, 0, 1])
    with pytest.raises(DataError, match="fewer than the 3 folds"):
        select_reg(X, y, k=3)


# ------------------------------------------------------------------------------------------------
# A synthetic data directory in SentEval's layout, read through sentsweep.data


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def toy_data(tmp_path: Path, polarity, data_module) -> Path:
    """MR, TREC and MRPC files with easily separable synthetic content (no SST2, CR, ...)."""
    texts, y = polarity(80, seed=5)
    _write(tmp_path / "senteval/MR/rt-polarity.pos", [t for t, lab in zip(texts, y, strict=True) if lab])
    _write(tmp_path / "senteval/MR/rt-polarity.neg", [t for t, lab in zip(texts, y, strict=True) if not lab])
    trec_words = {"HUM": "who person name", "LOC": "where city country", "NUM": "how many number"}
    rng = np.random.default_rng(7)
    for split, n in (("train_5500.label", 60), ("TREC_10.label", 30)):
        lines = []
        for i in range(n):
            label = list(trec_words)[i % 3]
            words = list(rng.choice(trec_words[label].split(), size=3)) + ["the", "question", str(i)]
            lines.append(f"{label}:other {' '.join(words)} ?")
        _write(tmp_path / "senteval/TREC" / split, lines)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    for split, n in (("train", 60), ("test", 20)):
        rows = [header]
        for i in range(n):
            s1 = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "omega", "sigma"], size=4)) + f" {i}"
            s2 = s1 if i % 2 else f"completely unrelated words here {i + 1000}"
            rows.append(f"{i % 2}\t{i}\t{i + 1}\t{s1}\t{s2}")
        _write(tmp_path / f"senteval/MRPC/msr_paraphrase_{split}.txt", rows)
    return tmp_path


def test_evaluate_senteval_on_a_toy_data_dir(embedder, toy_data) -> None:
    result = evaluate_senteval(embedder, ["mr", "trec", "mrpc"], data_dir=toy_data, kfold=3, inner_kfold=2)
    assert set(result.metrics) == {"mr_acc", "trec_acc", "mrpc_acc", "mrpc_f1", "senteval_avg"}
    assert result.metrics["mr_acc"] > 95
    assert result.metrics["trec_acc"] > 90
    assert result.metrics["mrpc_acc"] > 90 and result.metrics["mrpc_f1"] > 90
    avg = np.mean([result.metrics[k] for k in ("mr_acc", "trec_acc", "mrpc_acc")])
    assert result.metrics["senteval_avg"] == pytest.approx(avg)
    table = result.table.set_index("task")
    assert table.loc["trec", "n_train"] == 60 and table.loc["trec", "n_test"] == 30
    assert table.loc["mrpc", "n_test"] == 20
    assert result.info["senteval_kfold"] == 3 and result.info["data_is_sample"] is False
    # each distinct sentence encoded once across the three tasks
    assert len(embedder.encoded) == len(set(embedder.encoded))


def test_default_tasks_skip_absent_data_with_a_note(embedder, toy_data) -> None:
    result = evaluate_senteval(embedder, data_dir=toy_data, kfold=2)
    assert {"mr_acc", "trec_acc", "mrpc_acc"} <= set(result.metrics)
    assert "sst2_acc" not in result.metrics and "cr_acc" not in result.metrics
    notes = result.table.set_index("task")["note"]
    assert notes["sst2"].startswith("skipped: data absent") and "SST" in notes["sst2"]
    assert list(result.table.task) == ["mr", "cr", "subj", "mpqa", "trec", "mrpc", "sst2"]


def test_explicitly_requested_absent_task_raises(embedder, toy_data) -> None:
    with pytest.raises(DataError, match="sentiment-train"):
        evaluate_senteval(embedder, ["mr", "sst2"], data_dir=toy_data, kfold=2)
    result = evaluate_senteval(embedder, ["mr", "sst2"], data_dir=toy_data, kfold=2, optional=["sst2"])
    assert "mr_acc" in result.metrics and "sst2_acc" not in result.metrics


def test_unknown_senteval_task(embedder) -> None:
    with pytest.raises(ValueError, match=r"unknown SentEval task.*'sst5'.*valid names: mr, cr"):
        evaluate_senteval(embedder, ["mr", "sst5"])


def test_a_task_figure_does_not_depend_on_the_other_tasks_run(embedder, toy_data) -> None:
    alone = evaluate_senteval(embedder, ["mr"], data_dir=toy_data, kfold=3, inner_kfold=2)
    together = evaluate_senteval(embedder, ["trec", "mr"], data_dir=toy_data, kfold=3, inner_kfold=2)
    assert alone.metrics["mr_acc"] == together.metrics["mr_acc"]
    assert alone.table.set_index("task").loc["mr", "reg"] == together.table.set_index("task").loc["mr", "reg"]
