"""The suite entry point (task groups, merging) and EvalResult serialisation."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from sentsweep.evaluation import STS_TASKS, EvalResult, evaluate, split_tasks


def test_groups_expand_and_only_group_members_are_optional() -> None:
    sts, senteval, optional = split_tasks(["sts"])
    assert sts == list(STS_TASKS) and senteval == [] and optional == set()
    sts, senteval, optional = split_tasks("senteval")
    assert senteval == ["mr", "cr", "subj", "mpqa", "trec", "mrpc", "sst2", "sick_relatedness", "sick_entailment"]
    assert optional == set(senteval)
    sts, senteval, optional = split_tasks("stsb,sickr, MR")
    assert (sts, senteval, optional) == (["stsb", "sickr"], ["mr"], set())
    _, senteval, optional = split_tasks(["senteval", "sst2"])
    assert "sst2" in senteval and "sst2" not in optional and "mr" in optional


def test_unknown_task_lists_every_valid_name(embedder) -> None:
    with pytest.raises(ValueError, match=r"unknown task\(s\) \['glue'\]; valid names: sts, senteval, sts12"):
        evaluate(embedder, ["sts", "glue"])
    with pytest.raises(ValueError, match="no task given"):
        split_tasks(" , ")


def test_merge_json_csv_round_trip(tmp_path) -> None:
    a = EvalResult({"stsb_test": 80.0}, pd.DataFrame({"task": ["stsb"], "spearman": [80.0]}), {"x": 1})
    b = EvalResult(
        {"mr_acc": 75.5, "mrpc_f1": math.nan},
        pd.DataFrame({"task": ["mr"], "acc": [75.5], "note": [None]}),
        {"y": [1e-5]},
    )
    merged = a.merge(b)
    assert merged.metrics == {
        "stsb_test": 80.0,
        "mr_acc": 75.5,
        "mrpc_f1": pytest.approx(math.nan, nan_ok=True),
    }
    assert list(merged.table.task) == ["stsb", "mr"] and set(merged.table.columns) == {
        "task",
        "spearman",
        "acc",
        "note",
    }
    text = merged.to_json(tmp_path / "r.json")
    data = json.loads(text)  # strict JSON: NaN became null
    assert data["metrics"]["mrpc_f1"] is None and data["table"][0]["acc"] is None
    back = EvalResult.from_json(tmp_path / "r.json")
    assert back.metrics["stsb_test"] == 80.0 and math.isnan(back.metrics["mrpc_f1"])
    assert back.info == {"x": 1, "y": [1e-5]}
    csv = merged.to_csv(tmp_path / "r.csv")
    assert csv.splitlines()[0] == "task,spearman,acc,note" and (tmp_path / "r.csv").read_text() == csv
    assert EvalResult().merge(a).table.equals(a.table)


def test_evaluate_merges_sts_and_senteval_on_shared_data(embedder, data_module, shared_data) -> None:
    result = evaluate(embedder, "stsb_test,mrpc", data_dir=shared_data, kfold=2, setting="fast")
    assert {"stsb_test", "mrpc_acc", "mrpc_f1", "senteval_avg"} <= set(result.metrics)
    assert set(result.table.task) == {"stsb", "mrpc"}
    assert 50 < result.metrics["mrpc_acc"] < 90
    json.loads(result.to_json())
