"""A multi-view model as an ``Embedder``: ``encode(sentences) -> [f(s); g(s)]``, with ``save`` and ``load``.

The inference embedding is the paper's: both views concatenated. A trainable vocabulary is expanded by a linear
map from the word vectors (:class:`~sentsweep.methods.multiview.vocab.VocabularyExpansion`) so that words unseen
in training still embed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from sentsweep.methods.multiview.model import (
    FROZEN_KEY,
    SETTINGS_FILE,
    VOCAB_FILE,
    WEIGHTS_FILE,
    MultiViewModel,
    MultiViewSettings,
    ParsedLike,
    SentenceArrays,
    SentenceParser,
    build_model,
    collate,
    prepare,
)
from sentsweep.methods.multiview.views import ViewInputs
from sentsweep.methods.multiview.vocab import (
    Vocabulary,
    VocabularyExpansion,
    cached_positions,
    load_word_vectors,
)


class MultiViewEncoder:
    """A trained (or fresh) :class:`MultiViewModel` as an ``Embedder``: ``encode(sentences) -> [f; g]``."""

    #: ``encode`` never autocasts (the tree cells turn it off): the metric protocol's precision.
    eval_precision = "float32"

    def __init__(
        self,
        model: MultiViewModel,
        vocab: Vocabulary,
        parser: SentenceParser,
        batch_size: int = 256,
    ) -> None:
        self.model = model
        self.vocab = vocab
        self.parser = parser
        self.batch_size = batch_size

    @property
    def settings(self) -> MultiViewSettings:
        return self.model.settings

    @property
    def device(self) -> torch.device:
        return next(p for p in self.model.parameters()).device

    def prepare(self, parsed: Sequence[ParsedLike], vocab: Vocabulary | None = None) -> list[SentenceArrays]:
        s = self.settings
        return [prepare(p, vocab or self.vocab, s.needs_dep, s.needs_const) for p in parsed]

    def expansion(self) -> VocabularyExpansion | None:
        """The vocabulary expansion of the current weights (None unless ``settings.expands_vocabulary``):
        least-squares maps from the word vectors to both views' trained tables, fitted on their shared words."""
        s = self.settings
        if not s.expands_vocabulary:
            return None
        assert self.model.embed_f is not None and self.model.embed_g is not None
        tables = [t.weight.detach().float().cpu().numpy() for t in (self.model.embed_f, self.model.embed_g)]
        return VocabularyExpansion(self.vocab, load_word_vectors(s.word_vectors, s.max_vectors), tables,
                                   cached_positions(s.word_vectors, s.max_vectors))

    def inputs(self, items: Sequence[SentenceArrays]) -> ViewInputs:
        s = self.settings
        return collate(items, s.needs_dep, s.needs_const).to(self.device)

    def encode(self, sentences: list[str], batch_size: int | None = None) -> np.ndarray:
        """``[f(s); g(s)]`` per sentence, float32 ``(n, 2 * hidden_size)``; eval mode, no gradients."""
        if not sentences:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        size = batch_size or self.batch_size
        parsed = self.parser.parse(list(sentences))
        vocab, extra = self.vocab, None
        expansion = self.expansion()
        if expansion is not None:  # unknown words that the vector table has: mapped, not <unk>
            vocab, rows = expansion.extend(t for p in parsed for t in p.tokens)
            extra = (torch.from_numpy(rows[0]).to(self.device), torch.from_numpy(rows[1]).to(self.device))
        items = self.prepare(parsed, vocab)
        was_training = self.model.training
        self.model.eval()
        out = []
        try:
            with torch.no_grad():
                for start in range(0, len(items), size):
                    f, g = self.model(self.inputs(items[start : start + size]), extra)
                    out.append(torch.cat([f, g], dim=-1).float().cpu().numpy())
        finally:
            self.model.train(was_training)
        return np.concatenate(out).astype(np.float32, copy=False)

    # -- persistence -------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """``multiview.json`` (settings), ``vocab.txt`` (trainable vocabularies) and ``model.safetensors``
        (all weights but frozen vectors, which reload from ``word_vectors``)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        settings = asdict(self.settings)
        settings["views"] = list(self.settings.views)
        (directory / SETTINGS_FILE).write_text(json.dumps(settings, indent=2) + "\n")
        if not self.settings.freeze_vectors:
            (directory / VOCAB_FILE).write_text("\n".join(self.vocab.words[2:]) + "\n", encoding="utf-8")
        state = {k: v.detach().contiguous().cpu() for k, v in self.model.trainable_state().items()}
        save_file(state, str(directory / WEIGHTS_FILE))
        return directory

    def load_weights(self, directory: str | Path) -> None:
        """Load weights written by :meth:`save` into this encoder's model (same settings)."""
        state = load_file(str(Path(directory) / WEIGHTS_FILE), device=str(self.device))
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        if unexpected or [k for k in missing if k != FROZEN_KEY]:
            raise ValueError(f"weights do not match the model: missing {missing}, unexpected {unexpected}")

    @classmethod
    def load(
        cls,
        directory: str | Path,
        parser_factory: Callable[[MultiViewSettings], SentenceParser],
        device: str | torch.device | None = None,
        batch_size: int = 256,
    ) -> MultiViewEncoder:
        """Rebuild an encoder saved by :meth:`save`; ``parser_factory`` makes its parser from the settings."""
        directory = Path(directory)
        raw = json.loads((directory / SETTINGS_FILE).read_text())
        settings = MultiViewSettings.from_saved(raw)
        if settings.freeze_vectors:
            model, vocab = build_model(settings)
        else:
            words = (directory / VOCAB_FILE).read_text(encoding="utf-8").split("\n")
            vocab = Vocabulary([w for w in words if w], lowercase=bool(settings.lowercase))
            vectors_dim = None
            if settings.trainable_init == "vectors":
                vectors_dim = load_word_vectors(settings.word_vectors, settings.max_vectors).dim
            model = MultiViewModel(settings, len(vocab), settings.table_dim(vectors_dim))
        model.to(device or "cpu")
        encoder = cls(model, vocab, parser_factory(settings), batch_size)
        encoder.load_weights(directory)
        return encoder


def nearest_neighbours(
    embedder: Any, queries: Sequence[str], sentences: Sequence[str], k: int = 2
) -> list[list[tuple[str, float]]]:
    """For each query, the ``k`` nearest of ``sentences`` by cosine distance (the paper's Table 2);
    a sentence identical to the query is skipped."""
    pool = list(dict.fromkeys(sentences))
    emb = np.asarray(embedder.encode(pool), dtype=np.float64)
    q = np.asarray(embedder.encode(list(queries)), dtype=np.float64)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True).clip(1e-12)
    q /= np.linalg.norm(q, axis=1, keepdims=True).clip(1e-12)
    out = []
    for query, row in zip(queries, q @ emb.T, strict=True):
        ranked = [i for i in np.argsort(-row, kind="stable") if pool[i] != query][:k]
        out.append([(pool[i], float(1.0 - row[i])) for i in ranked])
    return out
