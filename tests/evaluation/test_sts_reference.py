"""Our STS-B figure against sentence-transformers' own ``EmbeddingSimilarityEvaluator``: same model, same
file, equal to 0.01 (the shared STS-B test set when present, else the bundled sample)."""

from __future__ import annotations

import pytest

from sentsweep.config import data_dir_from_env
from sentsweep.data import scored_pairs
from sentsweep.evaluation import evaluate
from sentsweep.methods.encoders import EncoderSettings, TransformerEncoder


def test_stsb_test_equals_sentence_transformers_evaluator(minilm_path: str) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    data_dir = data_dir_from_env()
    pairs = scored_pairs("stsb", "test", data_dir=data_dir)
    assert len(pairs) >= 100
    ours = evaluate(TransformerEncoder(minilm_path, EncoderSettings(pooling="mean", max_length=128), device="cpu"),
                    "stsb_test", data_dir=data_dir).metrics["stsb_test"]

    model = SentenceTransformer(minilm_path, device="cpu")
    model.max_seq_length = 128
    evaluator = EmbeddingSimilarityEvaluator([p.s1 for p in pairs], [p.s2 for p in pairs],
                                             [p.score / 5.0 for p in pairs], name="stsb-test")
    reference = 100.0 * evaluator(model)["stsb-test_spearman_cosine"]
    assert ours == pytest.approx(reference, abs=0.01)
    if data_dir is not None and len(pairs) == 1379:  # the full test set: the MiniLM figure of issue 2
        assert ours == pytest.approx(82.03, abs=0.05)
