"""A trial reports what MLflow's UI shows without clicks, and the driver writes it on the trial's run: source tags,
dataset inputs with their contexts, each metric's protocol (compact tag + protocols.json), system metrics when
asked; the experiment is created as a model-training experiment (a real tiny training, real MLflow sqlite)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.fs
from mlflow import MlflowClient

from sentsweep.evaluation.metric_protocols import MetricProtocol, compact_id
from sentsweep.platform.tracking.parent_run import ensure_experiment
from sentsweep.platform.tracking.trial_runs import TrialRuns, reconcile
from sentsweep.tracking.vocabulary import (
    EXPERIMENT_KIND_TAG,
    GIT_TAG,
    PROTOCOL_TAG_PREFIX,
    PROTOCOLS_ARTIFACT,
    SOURCE_NAME_TAG,
    SOURCE_TYPE_TAG,
    TRAINING_KIND,
)
from sentsweep.trainables.cosent import COSENT
from sentsweep.trainables.method import run_trial
from sentsweep.trainables.run_record import RunRecord


def _tiny(tiny_bert_dir: Path, **overrides: Any) -> dict[str, Any]:
    return {"model": str(tiny_bert_dir), "max_steps": 2, "eval_every": 2, "max_train_pairs": 32,
            "max_dev_pairs": 40, "test_tasks": "stsb_test", "batch_size": 8, "seed": 3, "device": "cpu",
            **overrides}


def test_the_experiment_is_a_training_experiment(tracking_uri: str) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    created = ensure_experiment(client, "made-here", None)
    assert client.get_experiment(created).tags[EXPERIMENT_KIND_TAG] == TRAINING_KIND
    older = client.create_experiment("made-before")  # an experiment of an older version: marked when reused
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(older).tags
    assert ensure_experiment(client, "made-before", None) == older
    assert client.get_experiment(older).tags[EXPERIMENT_KIND_TAG] == TRAINING_KIND
    chosen = client.create_experiment("genai", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    ensure_experiment(client, "genai", None)  # a kind someone chose is kept
    assert client.get_experiment(chosen).tags[EXPERIMENT_KIND_TAG] == "genai_development"


def trial_reports(tiny_bert_dir: Path, folder: Path, **overrides: Any) -> dict[str, float]:
    """Train a tiny CoSENT trial as Tune would run it: its reports, with what they carry for its run, written to a
    trial folder's ``result.json`` as Tune's logger writes them; the final metrics."""
    config = COSENT.parse(_tiny(tiny_bert_dir, **overrides))
    reports: list[dict[str, Any]] = []
    _, final = run_trial(COSENT, config, report=lambda metrics, checkpoint: reports.append(metrics),
                         record=RunRecord.for_trial("cosent", config), save_weights=False)
    folder.mkdir(parents=True)
    lines = [json.dumps({**r, "trial_id": "t1", "training_iteration": i + 1}) for i, r in enumerate(reports)]
    (folder / "result.json").write_text("".join(line + "\n" for line in lines))
    return final


def test_a_trials_reports_carry_its_source_datasets_and_protocols(tiny_bert_dir: Path, tracking_uri: str,
                                                                 tmp_path: Path) -> None:
    client = MlflowClient(tracking_uri=tracking_uri)
    experiment = ensure_experiment(client, "trials", (tmp_path / "artifacts").as_uri())
    parent = client.create_run(experiment).info.run_id
    final = trial_reports(tiny_bert_dir, tmp_path / "sweep" / "train_t1")
    reconcile(pyarrow.fs.LocalFileSystem(), str(tmp_path / "sweep"), TrialRuns(client, experiment, parent))
    (run,) = [r for r in client.search_runs([experiment]) if r.info.run_id != parent]
    tags = run.data.tags
    assert run.info.status == "FINISHED" and run.data.params["lr"] and "system_metrics" not in run.data.params
    assert tags[SOURCE_NAME_TAG] == "sentsweep.trainables.cosent" and tags[SOURCE_TYPE_TAG] == "LOCAL"
    assert len(tags[GIT_TAG]) == 40  # the tests run from a git checkout

    inputs = client.get_run(run.info.run_id).inputs.dataset_inputs
    by_context = {i.tags[0].value: i.dataset for i in inputs}
    assert {i.tags[0].key for i in inputs} == {"mlflow.data.context"}
    assert set(by_context) == {"training", "validation", "test"}
    assert by_context["training"].name == "stsb/train[32 sampled]"  # max_train_pairs: a seeded sample
    assert by_context["validation"].name == "stsb/dev[40 sampled]"
    assert by_context["test"].name == "stsb/test" and by_context["test"].source_type == "local"
    assert json.loads(by_context["test"].source)["uri"].endswith("sts-test.csv")
    assert len(by_context["test"].digest) == 16 and json.loads(by_context["test"].profile)["bytes"] > 0

    # every logged evaluation metric has its protocol, as a compact tag and in protocols.json
    ids = {k.removeprefix(PROTOCOL_TAG_PREFIX): compact_id(v) for k, v in tags.items()
           if k.startswith(PROTOCOL_TAG_PREFIX)}
    assert set(ids) == {"stsb_test", "stsb_dev"} and set(ids) <= set(final)
    stored = client.download_artifacts(run.info.run_id, PROTOCOLS_ARTIFACT)
    protocols = {k: MetricProtocol.from_dict(v) for k, v in json.loads(Path(stored).read_text()).items()}
    assert {k: p.id for k, p in protocols.items()} == ids
    dev, test = protocols["stsb_dev"], protocols["stsb_test"]
    assert (dev.task, dev.split, test.split) == ("stsb", "dev", "test")
    assert "40 pairs sampled (seed 0)" in dev.aggregation and "sampled" not in test.aggregation  # the dev's only
    # the evaluation length (eval_max_length: the tiny model's limit), not the training max_length
    assert test.pooling == "mean" and test.max_length == 128 and len(test.data_sha256) == 64
    assert test.code_version.startswith("sentsweep ") and len(test.eval_code) == 12
    assert tags[f"{PROTOCOL_TAG_PREFIX}stsb_test"].startswith(test.id)


def test_system_metrics_are_reported_with_the_results_when_asked(tiny_bert_dir: Path, tmp_path: Path) -> None:
    trial_reports(tiny_bert_dir, tmp_path / "on", system_metrics=True, system_metrics_interval_s=0.001)
    trial_reports(tiny_bert_dir, tmp_path / "off")
    on = [json.loads(line) for line in (tmp_path / "on" / "result.json").read_text().splitlines()]
    off = [json.loads(line) for line in (tmp_path / "off" / "result.json").read_text().splitlines()]
    assert all(r["system/process_rss_megabytes"] > 0 for r in on)
    assert not any(k.startswith("system/") for r in off for k in r)
