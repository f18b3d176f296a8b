"""CoSENT's max_length is a training length: dev selection, the test suites and the saved model see whole
sentences (eval_max_length, default the model's limit), for the bi-encoder and the cross-encoder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from sentsweep.data import resolve_data_dir, sts_subsets
from sentsweep.methods.encoders import ENCODER_CONFIG_FILE, TransformerEncoder
from sentsweep.trainables.cosent import COSENT, CosentTask

TRAIN_LENGTH = 16


@pytest.fixture(scope="module")
def long_sentence() -> str:
    """The longest sentence of the bundled STS13 sample (FNWN): 72 words."""
    subsets = sts_subsets("sts13", data_dir=resolve_data_dir(None))
    return max((s for pairs in subsets.values() for p in pairs for s in (p.s1, p.s2)), key=lambda s: len(s.split()))


def _task(tiny_bert_dir: Path, **overrides: Any) -> CosentTask:
    return CosentTask(COSENT.parse({"model": str(tiny_bert_dir), "max_length": TRAIN_LENGTH, "max_train_pairs": 8,
                                    "max_dev_pairs": 8, "device": "cpu", **overrides}))


def _lengths_seen(module: torch.nn.Module, run: Any) -> list[int]:
    """The unpadded length of every row that reached ``module`` while ``run()`` ran."""
    seen: list[int] = []

    def hook(_: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        seen.extend(int(n) for n in kwargs["attention_mask"].sum(1))

    handle = module.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        run()
    finally:
        handle.remove()
    return seen


def test_the_bi_encoder_trains_at_max_length_and_evaluates_whole_sentences(
    tiny_bert_dir: Path, long_sentence: str, tmp_path: Path
) -> None:
    task = _task(tiny_bert_dir)
    encoder = task.net.encoder
    whole = len(encoder.tokenizer(long_sentence)["input_ids"])
    assert whole > 60
    train = _lengths_seen(encoder.model, lambda: task.net([long_sentence], ["A short one."]))
    assert max(train) == TRAIN_LENGTH
    evaluated = _lengths_seen(encoder.model, lambda: encoder.encode([long_sentence]))
    assert evaluated == [whole]  # every token: dev selection and the test suites go through encode
    # the saved model keeps the evaluation length, and encodes whole sentences when loaded
    task.save(tmp_path / "best")
    assert json.loads((tmp_path / "best" / ENCODER_CONFIG_FILE).read_text())["max_length"] == 128
    loaded = TransformerEncoder.load(tmp_path / "best", device="cpu")
    assert _lengths_seen(loaded.model, lambda: loaded.encode([long_sentence])) == [whole]


def test_an_explicit_eval_max_length_cuts_evaluation_there(tiny_bert_dir: Path, long_sentence: str) -> None:
    task = _task(tiny_bert_dir, eval_max_length=40)
    encoder = task.net.encoder
    assert _lengths_seen(encoder.model, lambda: encoder.encode([long_sentence])) == [40]
    assert max(_lengths_seen(encoder.model, lambda: task.net([long_sentence], ["x"]))) == TRAIN_LENGTH
    with pytest.raises(Exception, match="eval_max_length"):
        COSENT.parse({"eval_max_length": 4})


def test_the_cross_encoder_scores_whole_pairs(tiny_bert_dir: Path, long_sentence: str) -> None:
    task = _task(tiny_bert_dir, architecture="cross")
    net = task.net
    whole = len(net.tokenizer(long_sentence, "A short one.")["input_ids"])
    assert max(_lengths_seen(net.model, lambda: net([long_sentence], ["A short one."]))) == TRAIN_LENGTH
    assert _lengths_seen(net.model, lambda: net.predict([(long_sentence, "A short one.")])) == [whole]


def test_a_transformer_by_name_or_folder_evaluates_at_the_models_limit(minilm_path: str) -> None:
    """``sentsweep evaluate --model minilm`` (a name, a hub id, a plain model folder) encodes up to the model's
    limit, as the trained models evaluate, unless a max length is given."""
    from sentsweep.trainables.registry import load_encoder

    by_name = load_encoder("minilm", device="cpu")
    assert by_name.settings.max_length == 512  # all-MiniLM-L6-v2's limit
    assert load_encoder(minilm_path, device="cpu").settings.max_length == 512  # its folder, no saved settings
    assert load_encoder("minilm", device="cpu", max_length=64).settings.max_length == 64
    long_text = " ".join(["word"] * 300)
    seen = _lengths_seen(by_name.model, lambda: by_name.encode([long_text]))
    assert seen == [302]  # every token and [CLS] [SEP]
