"""SNCSE's 32 tokens are a training length: evaluation and saved models encode whole STS sentences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sentsweep.data import resolve_data_dir, sts_subsets
from sentsweep.methods.encoders import ENCODER_CONFIG_FILE
from sentsweep.methods.sncse.model import ANCHOR_TEMPLATE, SNCSE_FILE, SncseModel, with_final_punctuation
from sentsweep.trainables.sncse import SncseConfig


@pytest.fixture(scope="module")
def long_sentence() -> str:
    """The longest sentence of the bundled STS13 sample (FNWN): 72 words."""
    subsets = sts_subsets("sts13", data_dir=resolve_data_dir(None))
    return max((s for pairs in subsets.values() for p in pairs for s in (p.s1, p.s2)), key=lambda s: len(s.split()))


def _model_inputs(model: SncseModel, sentences: list[str]) -> list[list[int]]:
    """The token ids each sentence reached the transformer with (a forward hook on the model)."""
    seen: list[torch.Tensor] = []

    def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        seen.extend(row[m.bool()] for row, m in zip(ids, mask, strict=True))

    handle = model.encoder.model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        model.encode(sentences)
    finally:
        handle.remove()
    return [row.tolist() for row in seen]


def _whole_prompt(model: SncseModel, sentence: str) -> list[int]:
    tok = model.encoder.tokenizer
    return tok(ANCHOR_TEMPLATE.format(sentence=with_final_punctuation(sentence), mask=tok.mask_token))["input_ids"]


def test_a_60_token_sts_sentence_reaches_the_model_whole(tiny_bert_dir: Path, long_sentence: str) -> None:
    model = SncseModel(str(tiny_bert_dir), max_length=32, device="cpu")
    sentence_tokens = model.encoder.tokenizer(long_sentence, add_special_tokens=False)["input_ids"]
    assert len(sentence_tokens) >= 60
    (ids,) = _model_inputs(model, [long_sentence])
    assert ids == _whole_prompt(model, long_sentence)  # every token, template included
    assert len(ids) > len(sentence_tokens) > 32
    assert model.eval_max_length == 128  # the tiny model's position limit
    # training prompts are still cut at 32, the template kept
    train = model.tokenize_views([long_sentence])["input_ids"]
    assert train.shape[1] == 32


def test_an_explicit_eval_max_length_cuts_the_sentence(tiny_bert_dir: Path, long_sentence: str) -> None:
    model = SncseModel(str(tiny_bert_dir), max_length=32, eval_max_length=32, device="cpu")
    (ids,) = _model_inputs(model, [long_sentence])
    assert len(ids) == 32 and ids != _whole_prompt(model, long_sentence)
    assert SncseConfig(eval_max_length=48).eval_max_length == 48
    assert SncseConfig().eval_max_length is None and SncseConfig().max_length == 32


def test_saved_models_keep_the_evaluation_length(tiny_bert_dir: Path, long_sentence: str, tmp_path: Path) -> None:
    model = SncseModel(str(tiny_bert_dir), max_length=24, device="cpu")
    folder = model.save(tmp_path / "m")
    assert json.loads((folder / ENCODER_CONFIG_FILE).read_text())["max_length"] == 128
    meta = json.loads((folder / SNCSE_FILE).read_text())
    assert (meta["train_max_length"], meta["eval_max_length"]) == (24, 128)
    loaded = SncseModel.load(folder, device="cpu")
    assert (loaded.max_length, loaded.eval_max_length) == (24, 128)
    assert _model_inputs(loaded, [long_sentence]) == [_whole_prompt(model, long_sentence)]
    # a folder saved before the fix stored 32 as the encoder's length: loading restores whole sentences
    settings = json.loads((folder / ENCODER_CONFIG_FILE).read_text())
    (folder / ENCODER_CONFIG_FILE).write_text(json.dumps({**settings, "max_length": 32}))
    (folder / SNCSE_FILE).write_text(json.dumps({k: v for k, v in meta.items() if not k.endswith("max_length")}))
    old = SncseModel.load(folder, device="cpu")
    assert (old.max_length, old.eval_max_length) == (32, 128)
    assert _model_inputs(old, [long_sentence]) == [_whole_prompt(model, long_sentence)]
