"""Vocabulary expansion (multi-view paper, section 4.1; Quick-Thoughts / skip-thoughts): a least-squares
linear map from the frozen word vectors to the trained embeddings, applied to words outside the trained
vocabulary at inference."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from sentsweep.data.parsing import Parser
from sentsweep.methods.multiview.encoder import MultiViewEncoder
from sentsweep.methods.multiview.model import MultiViewSettings, build_model
from sentsweep.methods.multiview.vocab import Vocabulary, VocabularyExpansion, WordVectors, fit_linear_map

KNOWN = ["the", "cat", "sat", "on", "mat", ".", "a", "dog", "ran", "home", "it", "rains"]
UNSEEN = ["zebra", "aardvark"]  # in the vector table, not in the trained vocabulary
DIM_IN, DIM_OUT = 4, 3


def _vectors(words: list[str], seed: int = 0) -> WordVectors:
    matrix = np.random.default_rng(seed).normal(size=(len(words), DIM_IN)).astype(np.float32)
    return WordVectors(tuple(words), matrix, "synthetic", uncased=True)


def test_least_squares_recovers_a_known_linear_map() -> None:
    rng = np.random.default_rng(1)
    source = rng.normal(size=(40, 5))
    true_w, true_b = rng.normal(size=(5, 3)), rng.normal(size=3)
    w, b = fit_linear_map(source, source @ true_w + true_b)
    np.testing.assert_allclose(w, true_w, atol=1e-10)
    np.testing.assert_allclose(b, true_b, atol=1e-10)
    with pytest.raises(ValueError, match="no shared words"):
        fit_linear_map(source[:0], source[:0, :3])


def test_expansion_maps_unknown_words_with_the_fitted_map() -> None:
    vectors = _vectors([*KNOWN, *UNSEEN, "unused"])
    vocab = Vocabulary(KNOWN[:10], lowercase=True)  # "it" and "rains" are left out of the trained vocabulary
    rng = np.random.default_rng(2)
    w, b = rng.normal(size=(DIM_IN, DIM_OUT)), rng.normal(size=DIM_OUT)
    position = {word: i for i, word in enumerate(vectors.words)}
    table = np.zeros((len(vocab), DIM_OUT))
    for i, word in enumerate(vocab.words[2:], start=2):  # trained rows: exactly the linear map of the vectors
        table[i] = vectors.matrix[position[word]] @ w + b
    table[1] = 7.0  # <unk>: not a shared word, must not enter the fit
    expansion = VocabularyExpansion(vocab, vectors, [table, 2 * table])
    assert expansion.shared == 10
    wider, (rows, doubled) = expansion.extend(["The", "Zebra", "nonexistentword", "zebra", "rains", "cat"])
    assert len(wider) == len(vocab) + 2  # zebra and rains; "the"/"cat" are known, the last one has no vector
    assert wider.id("zebra") == len(vocab) and wider.id("rains") == len(vocab) + 1
    assert wider.id("nonexistentword") == 1 and wider.id("cat") == vocab.id("cat")
    expected = vectors.matrix[[position["zebra"], position["rains"]]] @ w + b
    np.testing.assert_allclose(rows, expected, atol=1e-4)
    np.testing.assert_allclose(doubled, 2 * expected, atol=1e-4)
    same, none = expansion.extend(["cat", "nonexistentword"])
    assert same is vocab and none[0].shape == (0, DIM_OUT)


def _glove_file(path: Path, words: list[str]) -> Path:
    matrix = np.random.default_rng(3).normal(size=(len(words), DIM_IN))
    path.write_text("".join(f"{w} " + " ".join(f"{x:.6f}" for x in row) + "\n" for w, row in zip(words, matrix,
                                                                                                    strict=True)))
    return path


@pytest.mark.parametrize("expand", [True, False])
def test_encoder_gives_an_unknown_word_its_mapped_vector(
    tmp_path: Path, private_cache: Path, parser: Parser, expand: bool
) -> None:
    vectors_file = _glove_file(tmp_path / "vectors.txt", [*KNOWN, *UNSEEN])
    settings = MultiViewSettings(views=("bow", "bow"), hidden_size=5, word_vectors=str(vectors_file),
                                 freeze_vectors=False, vocab_size=50, expand_vocabulary=expand,
                                 trainable_init="vectors")  # the tables' shared rows are the vectors: exact maps
    counts = Counter(t for p in parser.parse(["The cat sat on the mat.", "A dog ran home."]) for t in p.tokens)
    model, vocab = build_model(settings, counts, seed=0)
    assert vocab.id("zebra") == 1
    with torch.no_grad():  # "train" the tables away from their GloVe init
        model.embed_f.weight.mul_(2.0).add_(0.5)
        model.embed_g.weight.mul_(-1.0)
        model.embed_f.weight[1] = 9.0  # <unk> rows, used only without expansion
        model.embed_g.weight[1] = -9.0
    encoder = MultiViewEncoder(model, vocab, parser)
    out = encoder.encode(["zebra"])
    zebra = np.loadtxt(vectors_file, usecols=range(1, DIM_IN + 1), dtype=np.float64)[len(KNOWN)]
    if expand:  # the fitted maps are x -> 2x + 0.5 and x -> -x (the tables' shared rows are exactly that)
        word_f, word_g = 2.0 * zebra + 0.5, -zebra
    else:
        word_f, word_g = np.full(DIM_IN, 9.0), np.full(DIM_IN, -9.0)
    with torch.no_grad():
        f = model.f.proj(torch.tensor(word_f, dtype=torch.float32)).numpy()
        g = model.g.proj(torch.tensor(word_g, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out[0], np.concatenate([f, g]), atol=1e-4)
    known = encoder.encode(["cat"])  # a trained word keeps its trained row either way
    with torch.no_grad():
        cat = model.f.proj(model.embed_f.weight[vocab.id("cat")]).numpy()
    np.testing.assert_allclose(known[0, :5], cat, atol=1e-5)
