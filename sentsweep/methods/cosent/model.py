"""CoSENT's two architectures: a Siamese bi-encoder and a cross-encoder.

- :class:`BiEncoder`: one :class:`~sentsweep.methods.encoders.TransformerEncoder` (any pooling) embeds
  both sides of each pair; the loss sees ``cos(u, v)`` (CoSENT eq. 10) or the embeddings (baselines).
- :class:`CrossEncoder`: the pair in one sequence ``[CLS] a [SEP] b [SEP]`` -> CLS state -> linear -> one
  score, trained with the ranking loss on raw scores (eq. 11).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from transformers import AutoConfig, AutoModel, AutoTokenizer

from sentsweep.methods.encoders import TransformerEncoder, resolve_model_path, token_limit
from sentsweep.methods.precision import EVAL_AMP, autocast_context, pick_device, precision_name

HEAD_FILE = "score_head.safetensors"


class BiEncoder(nn.Module):
    """Shared-weight encoder for both sentences of a pair; one forward pass over ``a + b``.

    ``max_length``: the training length of :meth:`forward` (None: the encoder's own); the encoder's settings keep
    the evaluation length (``encode``, the saved model)."""

    def __init__(self, encoder: TransformerEncoder, max_length: int | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        self.max_length = max_length

    @property
    def eval_precision(self) -> str:
        """What :meth:`predict` computes in here: ``float32`` unless ``eval_amp`` on a GPU."""
        return precision_name(self.device, self.eval_amp)

    def forward(self, first: Sequence[str], second: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Embeddings ``u`` of ``first`` and ``v`` of ``second``, each ``(batch, dim)``."""
        both = self.encoder(self.encoder.tokenize([*first, *second], max_length=self.max_length))
        return both[: len(first)], both[len(first) :]

    def similarity(self, first: Sequence[str], second: Sequence[str]) -> Tensor:
        u, v = self(first, second)
        return nn.functional.cosine_similarity(u.float(), v.float(), dim=-1)


class CrossEncoder(nn.Module):
    """A transformer reading the pair jointly; the CLS state is mapped to one score (CoSENT eq. 11)."""

    def __init__(
        self,
        model_name_or_path: str,
        max_length: int = 128,
        device: str | torch.device | None = None,
        *,
        eval_max_length: int | None = None,
        eval_amp: bool = EVAL_AMP,
    ) -> None:
        """``max_length``: the training length of a pair (both sentences and the special tokens);
        ``eval_max_length``: the length :meth:`predict` scores at (None: the model's limit); ``eval_amp``: autocast in
        :meth:`predict` on a GPU (default off: float32, as the references evaluate)."""
        super().__init__()
        path = resolve_model_path(model_name_or_path)
        config = AutoConfig.from_pretrained(path, trust_remote_code=False)
        self.tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        self.model = AutoModel.from_pretrained(
            path, config=config, trust_remote_code=False, use_safetensors=True
        )
        self.head = nn.Linear(config.hidden_size, 1)
        nn.init.normal_(
            self.head.weight, std=config.initializer_range if hasattr(config, "initializer_range") else 0.02
        )
        nn.init.zeros_(self.head.bias)
        head_file = Path(path) / HEAD_FILE
        if head_file.is_file():
            self.head.load_state_dict(load_file(str(head_file)))
        self.max_length = max_length
        self.eval_max_length = eval_max_length or token_limit(config, self.tokenizer)
        self.eval_amp = eval_amp
        self.to(pick_device(device))
        self.eval()

    @property
    def device(self) -> torch.device:
        return self.head.weight.device

    def forward(self, first: Sequence[str], second: Sequence[str], max_length: int | None = None) -> Tensor:
        """One raw score per pair, shape ``(batch,)``, each pair at most ``max_length`` tokens (None: the
        training length)."""
        batch = self.tokenizer(
            list(first),
            list(second),
            padding=True,
            truncation=True,
            max_length=max_length or self.max_length,
            return_tensors="pt",
        ).to(self.device)
        cls = self.model(**batch, return_dict=True).last_hidden_state[:, 0]
        return self.head(cls).squeeze(-1)

    @torch.no_grad()
    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """Scores for ``pairs`` without gradients (float32 numpy)."""
        was_training = self.training
        self.eval()
        scores = []
        try:
            for start in range(0, len(pairs), batch_size):
                chunk = pairs[start : start + batch_size]
                with autocast_context(self.device, self.eval_amp):
                    scores.append(self([a for a, _ in chunk], [b for _, b in chunk], self.eval_max_length)
                                  .float().cpu())
        finally:
            self.train(was_training)
        return torch.cat(scores).numpy() if scores else np.zeros(0, dtype=np.float32)

    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
        save_file({k: v.contiguous() for k, v in self.head.state_dict().items()}, str(directory / HEAD_FILE))
        return directory
