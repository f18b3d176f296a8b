"""The real CoSENT trainable under the platform: a tiny random BERT, the bundled sample, four steps."""

from __future__ import annotations

import numpy as np
from mlflow import MlflowClient

from sentsweep.tracking.vocabulary import PARENT_TAG


def test_cosent_sweep_end_to_end(tmp_path, tiny_bert_dir, tracking_uri, ray_session):
    from sentence_transformers import SentenceTransformer

    from sentsweep.methods.encoders import TransformerEncoder
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.sweep import run_sweep

    config = SweepConfig.model_validate({
        "name": "cosent-tiny", "method": "cosent", "search_space": "cosent", "num_samples": 2,
        "max_concurrent_trials": 2, "scheduler": {"type": "fifo"}, "model": str(tiny_bert_dir),
        "fixed": {"max_steps": 4, "eval_every": 2, "max_length": 32, "max_train_pairs": 64,
                  "max_dev_pairs": 40, "test_tasks": "stsb_test"},
        "storage_path": str(tmp_path / "ray_results"), "max_failures": 0, "plots": False,
        "tracking": {"uri": tracking_uri, "artifact_location": str(tmp_path / "mlartifacts"),
                     "experiment": "cosent"},
        "final_tasks": "stsb_test,sickr_test", "confirm": {"top_k": 0},
    })
    outcome = run_sweep(config, echo=lambda line: None)
    assert outcome.counts == {"finished": 2, "pruned": 0, "stopped": 0, "not started": 0, "failed": 0}
    assert {"scale", "pooling", "lr", "batch_size", "warmup_ratio"} <= set(outcome.best_config)
    client = MlflowClient(tracking_uri=tracking_uri)
    children = client.search_runs([outcome.experiment_id], f"tags.`{PARENT_TAG}` = '{outcome.parent_run_id}'")
    assert sorted(r.info.status for r in children) == ["FINISHED", "FINISHED"]
    paper = [r for r in children if r.data.params["scale"] == "20.0" and r.data.params["pooling"] == "mean"]
    assert paper, "the paper's defaults run first"
    assert {"stsb_dev", "stsb_test", "train_loss", "system/wall_seconds"} <= set(children[0].data.metrics)
    assert set(outcome.final_metrics) == {"stsb_test", "sickr_test"}
    (weights,) = (tmp_path / "ray_results").glob("*/*/best")  # the best trial's weights, kept once
    sentences = ["a man is playing a guitar .", "a woman is eating food"]
    ours = TransformerEncoder.load(weights).encode(sentences)
    exported = SentenceTransformer(outcome.export_dir, device="cpu").encode(sentences)
    np.testing.assert_allclose(exported, ours, atol=1e-5)
