"""Our STS-B figure against sentence-transformers' own ``EmbeddingSimilarityEvaluator``: same model, same
file, equal to 0.01: on the bundled sample, and (marked slow: about 6 minutes on a loaded 2-core machine) on the
shared STS-B test set, where the figure is also pinned. Our ``nli_dev`` (SNLI dev against its NLI labels) against
the same evaluator built as the CoSENT reference builds it, equal to 1e-4."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.data import SAMPLE_DIR, scored_pairs
from sentsweep.evaluation import evaluate
from sentsweep.evaluation.sts import NLI_DEV, StsEvaluator, sample_indices
from sentsweep.methods.encoders import EncoderSettings, TransformerEncoder


@pytest.fixture(params=["sample", pytest.param("shared", marks=pytest.mark.slow)])
def data_dir(request: pytest.FixtureRequest) -> Path:
    """The bundled sample, or the full shared data (``shared_data``: skipped when absent)."""
    return SAMPLE_DIR if request.param == "sample" else request.getfixturevalue("shared_data")


def test_stsb_test_equals_sentence_transformers_evaluator(minilm_path: str, data_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

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
    if len(pairs) == 1379:  # the full test set: MiniLM's published figure
        assert ours == pytest.approx(82.03, abs=0.05)


#: The CoSENT reference's labels (``utils.get_nli``): contradiction 0, neutral 1, entailment 2.
REFERENCE_NLI_LABELS = {"contradiction": 0, "neutral": 1, "entailment": 2}


@pytest.fixture(params=["sample", "shared", pytest.param("shared-all", marks=pytest.mark.slow)])
def snli_dev(request: pytest.FixtureRequest) -> tuple[Path, int | None]:
    """(data folder, pairs compared): the bundled sample's 150 SNLI dev pairs, 200 of the shared data's (a
    ``max_dev_pairs`` sample; ``shared_data``: skipped when absent), or (slow: minutes on a loaded CPU) all 9,842."""
    if request.param == "sample":
        return SAMPLE_DIR, None
    return request.getfixturevalue("shared_data"), 200 if request.param == "shared" else None


def _snli_dev_examples(data_dir: Path, limit: int | None) -> list:
    """The SNLI dev rows as the reference builds its dev samples: ``InputExample(texts=[s1, s2], label=0/1/2)``, read
    straight from SentEval's ``s1.dev``, ``s2.dev``, ``labels.dev``; with a ``limit``, the rows a ``max_dev_pairs``
    evaluator keeps (:func:`~sentsweep.evaluation.sts.sample_indices`)."""
    from sentence_transformers import InputExample

    folder = data_dir / "senteval" / "SNLI"
    columns = [(folder / name).read_text(encoding="utf-8").splitlines() for name in ("s1.dev", "s2.dev", "labels.dev")]
    rows = list(zip(*columns, strict=True))
    if limit is not None and limit < len(rows):
        rows = [rows[i] for i in sample_indices(len(rows), limit)]
    return [InputExample(texts=[s1.strip(), s2.strip()], label=REFERENCE_NLI_LABELS[label.strip()])
            for s1, s2, label in rows]


def test_nli_dev_equals_sentence_transformers_evaluator(minilm_path: str, snli_dev: tuple[Path, int | None]) -> None:
    """``nli_dev`` (``dev_data: nli``) is the CoSENT reference's selection figure: its
    ``EmbeddingSimilarityEvaluator.from_input_examples`` on the NLI dev rows (main similarity cosine, Spearman),
    x100, equal to 1e-4 on the same pairs (a ``max_dev_pairs`` sample when the set is cut)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    data_dir, limit = snli_dev
    examples = _snli_dev_examples(data_dir, limit)
    assert len(examples) >= 150 and {e.label for e in examples} == {0, 1, 2}
    encoder = TransformerEncoder(minilm_path, EncoderSettings(pooling="mean", max_length=128), device="cpu")
    evaluated = StsEvaluator([NLI_DEV], data_dir=data_dir, max_pairs=limit)
    assert len(evaluated.sets[0].pairs) == len(examples)
    result = evaluated(encoder)
    ours = result.metrics[NLI_DEV]
    protocol = result.info["protocols"][NLI_DEV]  # the figure's protocol names the labels it correlates with
    assert (protocol["task"], protocol["split"]) == ("nli", "dev") and "contradiction 0" in protocol["aggregation"]

    model = SentenceTransformer(minilm_path, device="cpu")
    model.max_seq_length = 128
    evaluator = EmbeddingSimilarityEvaluator.from_input_examples(examples, name="nli-dev")
    reference = 100.0 * evaluator(model)["nli-dev_spearman_cosine"]
    print(f"nli_dev on {len(examples)} SNLI dev pairs: ours {ours:.6f}, sentence-transformers {reference:.6f}")
    assert ours == pytest.approx(reference, abs=1e-4)
