"""``sentsweep compare`` shows each figure's protocol and refuses to rank figures made under different
protocols unless ``--mixed-protocols`` (real MLflow sqlite; the runs carry what the driver
writes from a trial's reports)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow import MlflowClient

from sentsweep.cli import main
from sentsweep.evaluation.metric_protocols import MetricProtocol
from sentsweep.platform.report.compare import sweep_runs
from sentsweep.platform.report.protocols import MixedProtocolsError, protocol_table
from sentsweep.platform.tracking.trial_runs import TrialRuns
from sentsweep.tracking.vocabulary import (
    PROTOCOL_TAG_PREFIX,
    ROLE_TAG,
    RUN_RECORD_KEY,
    SWEEP_TAG,
    TRIAL_ID_TAG,
    protocol_record,
)

STSB = MetricProtocol("stsb", "test", "Spearman x100 of cosine", pooling="prompt_mask", max_length=None,
                      precision="float32", data_sha256="d" * 64, eval_code="e" * 12, code_version="sentsweep 0.1.0@abc")


def _sweep(client: MlflowClient, tmp_path: Path, name: str, protocols: list[MetricProtocol | None]) -> None:
    """A sweep parent run with one finished trial per protocol (None: a trial logged before protocols were)."""
    experiment = client.get_experiment_by_name("e")
    experiment_id = experiment.experiment_id if experiment else \
        client.create_experiment("e", artifact_location=(tmp_path / "artifacts").as_uri())
    parent = client.create_run(experiment_id, tags={ROLE_TAG: "sweep", SWEEP_TAG: name}, run_name=name)
    runs = TrialRuns(client, experiment_id, parent.info.run_id, name)
    for index, protocol in enumerate(protocols):
        record = {"protocols": protocol_record({"stsb_test": protocol})} if protocol else {}
        runs.run_id(f"t{index}")
        runs.deliver(f"t{index}", [{"training_iteration": 1, "step": 0, "stsb_test": 40.0 + index,
                                    RUN_RECORD_KEY: record}])
        runs.end(f"t{index}", "finished", None)


def test_one_protocol_is_shown_and_ranked(tracking_uri: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    _sweep(client, tmp_path, "a", [STSB, STSB])
    _sweep(client, tmp_path, "b", [STSB])
    table = protocol_table(sweep_runs(client))
    assert table[["metric", "protocol", "runs"]].values.tolist() == [["stsb_test", STSB.id, 3]]
    assert table.loc[0, "max length"] == "model limit" and table.loc[0, "pooling"] == "pooling prompt_mask"
    assert table.loc[0, "precision"] == "float32" and table.loc[0, "data"] == "data " + "d" * 12
    assert main(["compare", "--tracking-uri", tracking_uri]) == 0
    out = capsys.readouterr().out
    assert "## Protocols" in out and STSB.id in out and "Spearman x100 of cosine" in out


def test_mixed_protocols_are_refused_unless_asked(tracking_uri: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The SNCSE case: the same model family evaluated whole vs cut at 32 tokens is not one benchmark."""
    client = MlflowClient(tracking_uri=tracking_uri)
    cut = MetricProtocol(**{**STSB.__dict__, "max_length": 32})
    _sweep(client, tmp_path, "whole", [STSB])
    _sweep(client, tmp_path, "cut", [cut])
    with pytest.raises(MixedProtocolsError, match="measured under 2 .*: max_length 32 vs model limit\\)"):
        protocol_table(sweep_runs(client))
    assert main(["compare", "--tracking-uri", tracking_uri]) == 2
    err = capsys.readouterr().err
    assert "'stsb_test' was measured under 2 protocols" in err and "--mixed-protocols" in err
    assert "max_length 32" in err and "Traceback" not in err
    assert main(["compare", "--tracking-uri", tracking_uri, "--mixed-protocols"]) == 0
    out = capsys.readouterr().out
    assert STSB.id in out and cut.id in out and "not comparable" in out
    mixed = protocol_table(sweep_runs(client), mixed_protocols=True)
    assert sorted(mixed["mixed"]) == ["cut/t0", "whole/t0"]


def test_a_search_over_pooling_ranks_models_under_one_protocol(tracking_uri: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Pooling is the model's (the CoSENT paper's Tables VIII and IX rank poolings on one benchmark): trials that
    differ in it compare without --mixed-protocols, and the table lists every pooling its figures were made with."""
    client = MlflowClient(tracking_uri=tracking_uri)
    mean = MetricProtocol(**{**STSB.__dict__, "pooling": "mean", "code_version": "sentsweep 0.1.0@def"})
    assert mean.id == STSB.id and not STSB.differences(mean)
    _sweep(client, tmp_path, "pooling", [STSB, mean, STSB])
    table = protocol_table(sweep_runs(client))
    assert table[["metric", "protocol", "runs"]].values.tolist() == [["stsb_test", STSB.id, 3]]
    assert table.loc[0, "pooling"] == "pooling prompt_mask, pooling mean"
    assert table.loc[0, "code"] == "sentsweep 0.1.0@abc, sentsweep 0.1.0@def"
    assert main(["compare", "--tracking-uri", tracking_uri]) == 0
    assert "pooling prompt_mask, pooling mean" in capsys.readouterr().out


def test_a_figure_recorded_while_pooling_was_in_the_id_compares_with_later_ones(tracking_uri: str,
                                                                                tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    _sweep(client, tmp_path, "old", [STSB])
    _sweep(client, tmp_path, "new", [STSB])
    (old,) = [r for r in client.search_runs([client.get_experiment_by_name("e").experiment_id])
              if r.data.tags.get(TRIAL_ID_TAG) == "t0" and r.data.tags.get(SWEEP_TAG) == "old"]
    earlier = "0123456789" + STSB.compact().removeprefix(STSB.id)  # the same parts under another (older) id
    client.set_tag(old.info.run_id, f"{PROTOCOL_TAG_PREFIX}stsb_test", earlier)
    table = protocol_table(sweep_runs(client))
    assert table[["metric", "runs"]].values.tolist() == [["stsb_test", 2]]
    assert table.loc[0, "protocol"] in (f"0123456789, {STSB.id}", f"{STSB.id}, 0123456789")


def test_a_figure_without_a_recorded_protocol_does_not_rank_with_recorded_ones(tracking_uri: str,
                                                                              tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    _sweep(client, tmp_path, "old", [None])
    assert protocol_table(sweep_runs(client)).empty  # nothing recorded anywhere: nothing to check
    _sweep(client, tmp_path, "new", [STSB])
    with pytest.raises(MixedProtocolsError, match="no protocol recorded|recorded vs not recorded"):
        protocol_table(sweep_runs(client))
