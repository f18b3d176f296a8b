"""The SNCSE prompt encoder: templates, truncation, one stacked forward, MLP in training only, save/load."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from sentsweep.methods.encoders import TransformerEncoder
from sentsweep.methods.sncse.model import (
    ANCHOR_TEMPLATE,
    MLP_FILE,
    POSITIVE_TEMPLATE,
    MLPHead,
    SncseModel,
    default_lambda,
    identical_soft_negatives,
    with_final_punctuation,
)


@pytest.fixture(scope="module")
def model(tiny_bert_dir: Path) -> SncseModel:
    return SncseModel(str(tiny_bert_dir), max_length=24, device="cpu")


def _decode(model: SncseModel, ids: torch.Tensor) -> str:
    return " ".join(model.encoder.tokenizer.convert_ids_to_tokens(ids.tolist()))


def test_final_punctuation() -> None:
    assert with_final_punctuation("a man") == "a man ."
    assert with_final_punctuation("a man .") == "a man ."
    assert with_final_punctuation("is it?") == "is it?"
    assert with_final_punctuation('he said "no"') == 'he said "no"'  # a quote is punctuation
    assert with_final_punctuation("") == " ."


def test_templates() -> None:
    assert ANCHOR_TEMPLATE == 'This sentence : " {sentence} " means {mask} .'
    assert POSITIVE_TEMPLATE == 'This sentence of " {sentence} " means {mask} .'


def test_views_use_both_templates_and_one_mask_each(model: SncseModel) -> None:
    batch = model.tokenize_views(["a man", "the cat sat ."], ["not a man", "the cat did not sit ."])
    ids = batch["input_ids"]
    assert ids.shape[0] == 6
    texts = [_decode(model, row) for row in ids]
    assert texts[0].startswith('[CLS] this sentence : " a man . " means [MASK] .')
    assert texts[2].startswith('[CLS] this sentence of " a man . " means [MASK] .')
    assert texts[4].startswith('[CLS] this sentence of " not a man . " means [MASK] .')
    mask_id = model.encoder.tokenizer.mask_token_id
    assert (ids[torch.arange(6), batch["mask_positions"]] == mask_id).all()
    assert ((ids == mask_id).sum(dim=1) == 1).all()


def test_long_sentences_are_cut_and_the_template_survives(model: SncseModel) -> None:
    long = " ".join(["the man"] * 40)
    batch = model.tokenize_views([long], [long])
    assert batch["input_ids"].shape[1] <= 24
    for row in batch["input_ids"]:
        text = _decode(model, row[row != model.encoder.tokenizer.pad_token_id])
        assert text.endswith('" means [MASK] . [SEP]')


def test_forward_runs_the_three_views_in_one_pass(model: SncseModel) -> None:
    calls: list[int] = []
    handle = model.encoder.model.register_forward_hook(lambda mod, args, kwargs_out: calls.append(1))
    try:
        z1, z2, z3 = model(["a man", "a dog"], ["not a man", "not a dog"])
    finally:
        handle.remove()
    assert len(calls) == 1
    assert z1.shape == z2.shape == (2, 32) and z3 is not None and z3.shape == (2, 32)
    assert z1.requires_grad
    assert float(z1.detach().abs().max()) <= 1.0  # tanh MLP
    z1b, z2b, z3b = model(["a man"])
    assert z3b is None and z1b.shape == (1, 32)


def test_dropout_makes_the_positive_differ_only_in_training(model: SncseModel) -> None:
    model.train()
    torch.manual_seed(0)
    a = model(["a man is playing a guitar"])[1]
    b = model(["a man is playing a guitar"])[1]
    assert not torch.allclose(a, b)
    model.eval()
    with torch.no_grad():
        assert torch.allclose(model(["a man"])[1], model(["a man"])[1])


def test_encode_is_the_raw_anchor_mask_state_without_mlp(model: SncseModel) -> None:
    model.eval()
    emb = model.encode(["a man"])
    tok = model.encoder.tokenizer
    prompt = ANCHOR_TEMPLATE.format(sentence="a man .", mask=tok.mask_token)
    enc = tok([prompt], return_tensors="pt")
    with torch.no_grad():
        hidden = model.encoder.model(**enc).last_hidden_state[0]
    position = int((enc["input_ids"][0] == tok.mask_token_id).nonzero())
    np.testing.assert_allclose(emb[0], hidden[position].numpy(), rtol=1e-5, atol=1e-5)
    assert emb.dtype == np.float32 and emb.shape == (1, 32)


def test_save_and_load_round_trip(model: SncseModel, tmp_path: Path) -> None:
    with torch.no_grad():
        model.mlp.dense.bias.add_(0.5)
    folder = model.save(tmp_path / "m")
    assert (folder / MLP_FILE).exists() and (folder / "sncse.json").exists()
    loaded = SncseModel.load(folder, device="cpu")
    np.testing.assert_allclose(loaded.encode(["a cat sat"]), model.encode(["a cat sat"]), atol=1e-6)
    assert torch.equal(loaded.mlp.dense.bias, model.mlp.dense.bias)
    # the folder is also an ordinary prompt-mask encoder for `sentsweep evaluate`
    plain = TransformerEncoder.load(folder, device="cpu")
    assert plain.settings.pooling == "prompt_mask" and plain.settings.prompt_template == ANCHOR_TEMPLATE
    np.testing.assert_allclose(plain.encode(["a cat sat ."]), model.encode(["a cat sat"]), atol=1e-6)
    # load_weights restores into an existing model (the loop's best-checkpoint path)
    other = SncseModel(str(folder), device="cpu")
    with torch.no_grad():
        other.mlp.dense.bias.zero_()
    other.load_weights(folder)
    assert torch.equal(other.mlp.dense.bias, model.mlp.dense.bias)


def test_family_comes_from_the_config_not_the_path(tiny_bert_dir: Path, tmp_path: Path) -> None:
    misleading = shutil.copytree(tiny_bert_dir, tmp_path / "roberta-large-finetuned")
    model = SncseModel(str(misleading), device="cpu")
    assert model.family == "bert"
    assert default_lambda(model.family) == 1e-3


def test_roberta_uses_its_mask_token_and_lambda(tiny_roberta_dir: Path) -> None:
    model = SncseModel(str(tiny_roberta_dir), max_length=32, device="cpu")
    assert model.family == "roberta" and default_lambda(model.family) == 5e-4
    batch = model.tokenize_views(["a man"], ["not a man"])
    tok = model.encoder.tokenizer
    assert tok.mask_token == "<mask>"
    assert (batch["input_ids"][torch.arange(3), batch["mask_positions"]] == tok.mask_token_id).all()
    z1, z2, z3 = model(["a man"], ["not a man"])
    assert z3 is not None and z1.shape == (1, 32)


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_roberta_dir"])
def test_batched_prompt_filling_equals_fit(fixture: str, request: pytest.FixtureRequest) -> None:
    from transformers import AutoTokenizer

    from sentsweep.methods.encoders import PromptTokenizer
    from sentsweep.methods.sncse.model import fill_prompts

    tokenizer = AutoTokenizer.from_pretrained(request.getfixturevalue(fixture))
    sentences = [
        "a man .",
        "the cat sat on the mat .",
        " ".join(["the man is playing a guitar"] * 6) + " .",
        "this sentence means " * 9,
        "",
    ]
    for template in (ANCHOR_TEMPLATE, POSITIVE_TEMPLATE):
        prompt = PromptTokenizer(tokenizer, template, 24)
        assert fill_prompts(prompt, sentences) == [prompt.render(prompt.fit(s)) for s in sentences]


def test_mlp_is_initialised_as_the_reference(tiny_bert_dir: Path) -> None:
    """SimCSE/SNCSE's cl_init: weights ~ N(0, initializer_range = 0.02), zero bias (not nn.Linear's uniform)."""
    torch.manual_seed(0)
    weights = MLPHead(512).dense.weight.detach()  # 262k weights: a tight estimate of the spread
    assert float(weights.std()) == pytest.approx(0.02, rel=0.02)
    assert abs(float(weights.mean())) < 1e-3
    # nn.Linear's default is uniform in +-1/sqrt(512) = +-0.044 (std 0.0255): a normal exceeds that bound
    assert float(weights.abs().max()) > 0.044
    model = SncseModel(str(tiny_bert_dir), max_length=24, device="cpu")  # fresh: the module's model trains
    assert model.encoder.config.initializer_range == 0.02
    assert float(model.mlp.dense.bias.detach().abs().max()) == 0.0
    assert float(model.mlp.dense.weight.detach().std()) == pytest.approx(0.02, rel=0.3)  # 32 x 32 weights


# -- soft negatives that truncation makes identical to the positive -------------------
#: The negation edit ("not") lies past the 14-token sentence budget of max_length 24 in the long pair only.
LONG = "the man is playing the guitar and the dog is riding the horse and the cat is eating food"
LONG_NEG = "the man is playing the guitar and the dog is riding the horse and the cat is not eating food"
SHORT, SHORT_NEG = "the man is playing", "the man is not playing"


def test_a_negation_cut_off_by_max_length_is_counted_as_identical(model: SncseModel) -> None:
    """z3's prompt equals z2's when the edit lies past the cut (the reference truncates the same way)."""
    batch = model.tokenize_views([LONG, SHORT], [LONG_NEG, SHORT_NEG])
    assert identical_soft_negatives(batch, 2).tolist() == [True, False]
    assert not identical_soft_negatives(model.tokenize_views([LONG, SHORT]), 2).any()  # no soft negatives


@pytest.mark.parametrize("cache_minibatch", [None, 1])
def test_the_training_step_reports_the_truncated_share(model: SncseModel, cache_minibatch: int | None) -> None:
    """SncseTask.loss logs ``negation_truncated_share`` (the loop averages it as ``train_...``), cached or not."""
    from sentsweep.trainables.sncse import SncseConfig, SncseTask

    task = SncseTask.__new__(SncseTask)  # the step alone: no corpus, negator or dev set
    task.config = SncseConfig(model=str(model.encoder.name_or_path), max_length=24, batch_size=2,
                              cache_minibatch=cache_minibatch)
    task.model, task.lam = model, 1e-3
    task.sentences, task.negations = [LONG, SHORT, SHORT], [LONG_NEG, SHORT_NEG, SHORT_NEG]
    for rows, share in (([0], 1.0), ([1], 0.0), ([0, 1], 0.5), ([0, 1, 2], 1 / 3)):
        _, diagnostics = task.loss(torch.tensor(rows))
        assert diagnostics["negation_truncated_share"] == pytest.approx(share)
