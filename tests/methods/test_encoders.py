"""TransformerEncoder: every pooling hand-checked on a tiny random BERT, prompts, save/load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sentsweep.errors import ConfigError
from sentsweep.methods.encoders import EncoderSettings, TransformerEncoder, resolve_model_path
from sentsweep.methods.pooling import pool

SENTENCES = ["a man is playing guitar .", "the cat sat on the mat", "a dog"]
TEMPLATE = 'this sentence : " {sentence} " means {mask} .'


def _states(encoder: TransformerEncoder, sentences: list[str]):
    batch = encoder.tokenize(sentences)
    with torch.no_grad():
        out = encoder.model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            token_type_ids=batch.get("token_type_ids"),
            output_hidden_states=True,
        )
    return batch, out


@pytest.mark.parametrize("pooling", ["cls", "mean", "max", "first_last"])
def test_pooling_matches_hand_computation(tiny_bert_dir: Path, pooling: str) -> None:
    encoder = TransformerEncoder(str(tiny_bert_dir), EncoderSettings(pooling=pooling), device="cpu")
    got = encoder.encode(SENTENCES, batch_size=2)
    batch, out = _states(encoder, SENTENCES)
    for row, _ in enumerate(SENTENCES):
        n = int(batch["attention_mask"][row].sum())
        last = out.last_hidden_state[row, :n]
        if pooling == "cls":
            want = last[0]
        elif pooling == "mean":
            want = last.sum(0) / n
        elif pooling == "max":
            want = last.max(0).values
        else:
            want = ((out.hidden_states[1][row, :n] + out.hidden_states[-1][row, :n]) / 2).sum(0) / n
        np.testing.assert_allclose(got[row], want.numpy(), atol=1e-5)


def test_padding_does_not_change_embeddings(tiny_bert_dir: Path) -> None:
    encoder = TransformerEncoder(str(tiny_bert_dir), EncoderSettings(pooling="max"), device="cpu")
    together = encoder.encode(SENTENCES, batch_size=8)
    alone = np.stack([encoder.encode([s])[0] for s in SENTENCES])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_prompt_mask_takes_the_mask_state_and_truncates_the_sentence(tiny_bert_dir: Path) -> None:
    settings = EncoderSettings(pooling="prompt_mask", max_length=16, prompt_template=TEMPLATE)
    encoder = TransformerEncoder(str(tiny_bert_dir), settings, device="cpu")
    long_sentence = " ".join(["the man is playing guitar and"] * 10)
    batch = encoder.tokenize([long_sentence, "a dog"])
    assert batch["input_ids"].shape[1] == 16
    tokens = encoder.tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    # The template's tail survives the truncation: '" means [MASK] . [SEP]'.
    assert tokens[-5:] == ['"', "means", "[MASK]", ".", "[SEP]"]
    assert tokens[:5] == ["[CLS]", "this", "sentence", ":", '"']
    positions = batch["mask_positions"].tolist()
    assert batch["input_ids"][0, positions[0]] == encoder.tokenizer.mask_token_id
    assert batch["input_ids"][1, positions[1]] == encoder.tokenizer.mask_token_id
    got = encoder.encode([long_sentence, "a dog"])
    _, out = _states(encoder, [long_sentence, "a dog"])
    np.testing.assert_allclose(got[1], out.last_hidden_state[1, positions[1]].numpy(), atol=1e-5)


def test_unknown_pooling_and_bad_template_name_the_field(tiny_bert_dir: Path) -> None:
    with pytest.raises(ConfigError, match="pooling"):
        EncoderSettings(pooling="median")
    with pytest.raises(ConfigError, match="prompt_template"):
        EncoderSettings(pooling="prompt_mask", prompt_template="no placeholders")
    with pytest.raises(ConfigError, match="pooling"):
        pool("median", torch.zeros(1, 2, 3), torch.ones(1, 2))


def test_save_and_load_round_trip(tiny_bert_dir: Path, tmp_path: Path) -> None:
    encoder = TransformerEncoder(
        str(tiny_bert_dir), EncoderSettings(pooling="cls", max_length=32), device="cpu"
    )
    encoder.save(tmp_path / "saved")
    assert (tmp_path / "saved" / "model.safetensors").exists()
    again = TransformerEncoder.load(tmp_path / "saved", device="cpu")
    assert again.settings == encoder.settings
    np.testing.assert_allclose(again.encode(SENTENCES), encoder.encode(SENTENCES), atol=1e-6)
    assert again.family == "bert"


def test_forward_keeps_gradients(tiny_bert_dir: Path) -> None:
    encoder = TransformerEncoder(str(tiny_bert_dir), device="cpu")
    emb = encoder(encoder.tokenize(SENTENCES))
    emb.sum().backward()
    grads = [p.grad for p in encoder.model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_hub_names_pass_through_and_minilm_matches_sentence_transformers(minilm_path: str) -> None:
    assert resolve_model_path("bert-base-uncased") == "bert-base-uncased"
    assert Path(minilm_path, "model.safetensors").exists()
    from sentence_transformers import SentenceTransformer

    ours = TransformerEncoder("minilm", device="cpu").encode(SENTENCES, normalize=True)
    theirs = SentenceTransformer(minilm_path, device="cpu").encode(SENTENCES)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_length_buckets_give_the_same_embeddings_and_gradients(tiny_bert_dir: Path, monkeypatch) -> None:
    """A training forward on CPU in sub-batches of similar length equals the one padded forward (dropout off by
    zeroing its probabilities, so training mode still picks the buckets), values and gradients."""
    from sentsweep.methods import encoders

    sentences = [" ".join(["word"] * n) for n in (1, 30, 3, 12, 7, 25, 2, 9, 18, 4, 14, 5, 22, 6, 11, 8)]
    results = []
    for buckets in (1, encoders.CPU_LENGTH_BUCKETS):
        monkeypatch.setattr(encoders, "CPU_LENGTH_BUCKETS", buckets)
        torch.manual_seed(0)
        encoder = TransformerEncoder(str(tiny_bert_dir), EncoderSettings(pooling="mean"), device="cpu")
        for module in encoder.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        encoder.train()
        batch = encoder.tokenize(sentences)
        assert buckets == 1 or encoders.length_buckets(batch["attention_mask"], buckets) is not None
        emb = encoder(batch)
        (emb * torch.arange(emb.numel()).reshape(emb.shape)).sum().backward()
        results.append((emb.detach(), {n: p.grad.clone() for n, p in encoder.named_parameters() if p.grad is not None}))
    (one, one_grads), (split, split_grads) = results
    assert torch.allclose(one, split, atol=1e-5)
    assert one_grads.keys() == split_grads.keys()
    # relative to each parameter's largest gradient (those mathematically zero, as key biases, at 1 absolute)
    worst = max(float((one_grads[n] - split_grads[n]).abs().max() / one_grads[n].abs().max().clamp_min(1.0))
                for n in one_grads)
    assert worst < 1e-5


def test_length_buckets_group_similar_lengths_and_skip_small_batches() -> None:
    from sentsweep.methods.encoders import MIN_BUCKET_ROWS, length_buckets

    lengths = torch.tensor([5, 40, 6, 38, 7, 39, 5, 41] * 2)
    mask = (torch.arange(41)[None, :] < lengths[:, None]).long()
    groups = length_buckets(mask, 2)
    assert groups is not None and [sorted(lengths[g].tolist()) for g, _ in groups] == [[38, 38, 39, 39, 40, 40, 41, 41],
                                                                                       [5, 5, 5, 5, 6, 6, 7, 7]]
    assert [longest for _, longest in groups] == [41, 7]
    assert length_buckets(mask[: 2 * MIN_BUCKET_ROWS - 1], 4) is None  # too few rows for two groups
    assert length_buckets(torch.ones(32, 10, dtype=torch.long), 4) is None  # equal lengths: nothing to save


def test_prompt_fit_ends_on_characters_split_into_several_tokens(minilm_path: str) -> None:
    """A Hangul syllable is several word pieces with one character's offsets: cutting at the last piece's end
    does not shorten the sentence. Found on the shared Wikipedia sample, where ``fit`` looped for ever at
    SNCSE's training length; it now gives up one token at a time and ends."""
    import threading

    from transformers import AutoTokenizer

    from sentsweep.methods.encoders import PromptTokenizer
    from sentsweep.methods.sncse.model import ANCHOR_TEMPLATE

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    prompt = PromptTokenizer(tokenizer, ANCHOR_TEMPLATE, max_length=32)
    sentence = "Koreans do not call it jupan (주판), supan (수판) or anything else , as the dictionary says"
    fitted: list[str] = []
    worker = threading.Thread(target=lambda: fitted.append(prompt.fit(sentence)), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert fitted, "fit did not end within 30 s"
    assert sentence.startswith(fitted[0]) and len(fitted[0]) < len(sentence)
    assert len(tokenizer(prompt.render(fitted[0]))["input_ids"]) <= 32


# -- evaluation precision ---------------------------------------------------------------
class _FakeCuda:
    """Stands for a CUDA device where there is none: the decision reads ``device.type`` only."""

    type = "cuda"


def test_the_autocast_decision_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here: the decision function itself, on a fake CUDA device (the behaviour on a real GPU is
    ``torch.autocast`` with this dtype, :func:`autocast_context`)."""
    import sentsweep.methods.precision as precision

    for bf16, dtype in ((True, torch.bfloat16), (False, torch.float16)):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda bf16=bf16: bf16)
        assert precision.autocast_dtype(_FakeCuda(), True) is dtype  # type: ignore[arg-type]
        assert precision.precision_name(_FakeCuda(), True) == str(dtype).removeprefix("torch.")  # type: ignore
        assert precision.autocast_dtype(_FakeCuda(), False) is None  # type: ignore[arg-type]
        assert precision.precision_name(_FakeCuda(), False) == "float32"  # type: ignore[arg-type]
    assert precision.autocast_dtype(torch.device("cpu"), True) is None


def test_encode_evaluates_in_float32_unless_eval_amp(tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``encode`` asks for autocast with ``eval_amp`` (default off, as the references evaluate: SimCSE/SNCSE
    ``evaluation.py``), not with the training ``amp``; the states it sees are float32, and the trial config, the
    models and the metric protocol agree."""
    import sentsweep.methods.encoders as encoders
    from sentsweep.evaluation.metric_protocols import embedder_precision
    from sentsweep.methods.cosent.model import CrossEncoder
    from sentsweep.methods.sncse.model import SncseModel
    from sentsweep.trainables.trial_config import TrialConfig

    asked: list[bool] = []
    decide = encoders.autocast_context
    monkeypatch.setattr(encoders, "autocast_context", lambda device, enabled=True: asked.append(enabled)
                        or decide(device, enabled))
    encoder = TransformerEncoder(str(tiny_bert_dir), device="cpu")
    seen: list[torch.dtype] = []
    encoder.model.register_forward_hook(lambda _m, _i, out: seen.append(out.last_hidden_state.dtype))
    encoder.encode(["the man is playing", "a dog"])
    assert asked == [False] and seen == [torch.float32]
    assert TrialConfig().eval_amp is False and TrialConfig().amp is True  # training keeps its autocast
    assert embedder_precision(encoder, {}) == "float32"
    assert embedder_precision(None, {"eval_precision": "bfloat16"}) == "bfloat16"  # a pair scorer's, as told
    assert embedder_precision(object(), {}) == "unknown"
    assert embedder_precision(SncseModel(str(tiny_bert_dir), device="cpu"), {}) == "float32"
    assert CrossEncoder(str(tiny_bert_dir), device="cpu").eval_amp is False
    on = TransformerEncoder(str(tiny_bert_dir), device="cpu", eval_amp=True)
    on.encode(["a dog"])
    assert asked[-1] is True and on.eval_precision == "float32"  # asked, but a CPU does not autocast
