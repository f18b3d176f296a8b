"""evaluate_senteval on a synthetic data directory: every task, the settings by name, skipping and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sentsweep.errors import DataError
from sentsweep.evaluation import SENTEVAL_TASKS, evaluate_senteval


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def toy_data(tmp_path: Path, polarity, data_module) -> Path:
    """MR, TREC, MRPC and SICK files with easily learnable synthetic content (no SST2, CR, ...)."""
    texts, y = polarity(400, seed=5)
    _write(tmp_path / "senteval/MR/rt-polarity.pos", [t for t, lab in zip(texts, y, strict=True) if lab])
    _write(tmp_path / "senteval/MR/rt-polarity.neg", [t for t, lab in zip(texts, y, strict=True) if not lab])
    trec_words = {"HUM": "who person name", "LOC": "where city country", "NUM": "how many number"}
    rng = np.random.default_rng(7)
    for split, n in (("train_5500.label", 300), ("TREC_10.label", 60)):
        lines = []
        for i in range(n):
            label = list(trec_words)[i % 3]
            words = list(rng.choice(trec_words[label].split(), size=3)) + ["the", "question", str(i)]
            lines.append(f"{label}:other {' '.join(words)} ?")
        _write(tmp_path / "senteval/TREC" / split, lines)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    for split, n in (("train", 300), ("test", 60)):
        rows = [header]
        for i in range(n):
            s1 = " ".join(rng.choice(words, size=4)) + f" {i}"
            s2 = s1 if i % 2 else f"completely unrelated words here {i + 1000}"
            rows.append(f"{i % 2}\t{i}\t{i + 1}\t{s1}\t{s2}")
        _write(tmp_path / f"senteval/MRPC/msr_paraphrase_{split}.txt", rows)
    labels = ("CONTRADICTION", "NEUTRAL", "ENTAILMENT")
    for name, n in (("SICK_train.txt", 300), ("SICK_trial.txt", 60), ("SICK_test_annotated.txt", 90)):
        rows = ["pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"]
        for i in range(n):
            kind = i % 3
            s1 = " ".join(rng.choice(words, size=5))
            s2 = {0: f"completely unrelated words here {i}", 1: s1.split()[0] + " other words here", 2: s1}[kind]
            rows.append(f"{i}\t{s1}\t{s2}\t{1 + 2 * kind + rng.uniform(0, 0.9):.1f}\t{labels[kind]}")
        _write(tmp_path / "senteval/SICK" / name, rows)
    return tmp_path


def test_every_task_on_a_toy_data_dir(embedder, toy_data) -> None:
    tasks = ["mr", "trec", "mrpc", "sick_relatedness", "sick_entailment"]
    result = evaluate_senteval(embedder, tasks, data_dir=toy_data, kfold=3, inner_kfold=2)
    assert set(result.metrics) == {"mr_acc", "trec_acc", "mrpc_acc", "mrpc_f1", "sick_entailment_acc",
                                   "sick_relatedness_pearson", "sick_relatedness_spearman",
                                   "sick_relatedness_mse", "senteval_avg"}
    assert result.metrics["mr_acc"] > 90
    assert result.metrics["trec_acc"] > 90
    assert result.metrics["mrpc_acc"] > 90 and result.metrics["mrpc_f1"] > 90
    assert result.metrics["sick_entailment_acc"] > 90
    assert result.metrics["sick_relatedness_pearson"] > 80 and result.metrics["sick_relatedness_mse"] < 1.5
    avg = np.mean([result.metrics[k] for k in ("mr_acc", "trec_acc", "mrpc_acc")])  # the transfer tasks only
    assert result.metrics["senteval_avg"] == pytest.approx(avg)
    table = result.table.set_index("task")
    assert table.loc["trec", "n_train"] == 300 and table.loc["trec", "n_test"] == 60
    assert table.loc["mrpc", "n_test"] == 60 and table.loc["sick_entailment", "n_test"] == 90
    assert set(table.setting) == {"test", "toolkit regressor"}
    assert result.info["senteval_kfold"] == 3 and result.info["senteval_setting"] == "test"
    assert result.info["senteval_mrpc_features"] == "diff_prod" and result.info["data_is_sample"] is False
    # each distinct sentence encoded once across the tasks
    assert len(embedder.encoded) == len(set(embedder.encoded))


def test_settings_by_name_and_their_kfold(embedder, toy_data) -> None:
    fast = evaluate_senteval(embedder, ["mr", "trec"], data_dir=toy_data, setting="fast")
    assert fast.info["senteval_kfold"] == 5 and "rmsprop" in fast.info["senteval_classifier"]
    assert fast.table.set_index("task").loc["mr", "protocol"] == "5-fold cv, inner 5-fold selection"
    exact = evaluate_senteval(embedder, ["mr", "trec"], data_dir=toy_data, setting="lbfgs", kfold=3)
    assert exact.info["senteval_fits"] > 0 and "L-BFGS" in exact.info["senteval_classifier"]
    assert exact.metrics["mr_acc"] > 90
    with pytest.raises(ValueError, match="unknown SentEval setting 'slow'; valid names: test, fast, lbfgs"):
        evaluate_senteval(embedder, ["mr"], data_dir=toy_data, setting="slow")


def test_mrpc_features_option(embedder, toy_data) -> None:
    full = evaluate_senteval(embedder, ["mrpc"], data_dir=toy_data, kfold=3, mrpc_features="full", setting="fast")
    assert full.info["senteval_mrpc_features"] == "full"
    with pytest.raises(ValueError, match="mrpc_features must be one of diff_prod, full"):
        evaluate_senteval(embedder, ["mrpc"], data_dir=toy_data, mrpc_features="uv")


def test_default_tasks_skip_absent_data_with_a_note(embedder, toy_data) -> None:
    result = evaluate_senteval(embedder, data_dir=toy_data, kfold=2, setting="fast")
    assert {"mr_acc", "trec_acc", "mrpc_acc", "sick_entailment_acc"} <= set(result.metrics)
    assert "sst2_acc" not in result.metrics and "cr_acc" not in result.metrics
    notes = result.table.set_index("task")["note"]
    assert notes["sst2"].startswith("skipped: data absent") and "SST" in notes["sst2"]
    assert list(result.table.task) == list(SENTEVAL_TASKS)


def test_explicitly_requested_absent_task_raises(embedder, toy_data) -> None:
    with pytest.raises(DataError, match="sentiment-train"):
        evaluate_senteval(embedder, ["mr", "sst2"], data_dir=toy_data, kfold=2)
    result = evaluate_senteval(embedder, ["mr", "sst2"], data_dir=toy_data, kfold=2, optional=["sst2"], setting="fast")
    assert "mr_acc" in result.metrics and "sst2_acc" not in result.metrics


def test_unknown_senteval_task(embedder) -> None:
    with pytest.raises(ValueError, match=r"unknown SentEval task.*'sst5'.*valid names: mr, cr"):
        evaluate_senteval(embedder, ["mr", "sst5"])


def test_a_task_figure_does_not_depend_on_the_other_tasks_run(embedder, toy_data) -> None:
    alone = evaluate_senteval(embedder, ["mr"], data_dir=toy_data, kfold=3, inner_kfold=2, setting="fast")
    together = evaluate_senteval(embedder, ["trec", "mr"], data_dir=toy_data, kfold=3, inner_kfold=2, setting="fast")
    assert alone.metrics["mr_acc"] == together.metrics["mr_acc"]
    assert alone.table.set_index("task").loc["mr", "reg"] == together.table.set_index("task").loc["mr", "reg"]
