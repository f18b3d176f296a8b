"""Pooling: token states ``(batch, seq, dim)`` into sentence embeddings ``(batch, dim)``.

The poolings:

- ``cls``: the first token's last hidden state;
- ``mean``: attention-masked mean of the last hidden states;
- ``max``: attention-masked max over tokens;
- ``first_last``: masked mean of ``(hidden_states[1] + hidden_states[-1]) / 2``, the output of the
  *first transformer layer* plus the last one (``hidden_states[0]`` is the embedding layer). This is the
  corrected form SimCSE and the CoSENT code use; the original BERT-flow code averaged the embedding
  layer instead.
- ``prompt_mask``: the last hidden state at the mask token of a prompt template (SNCSE, PromptBERT).
  The template is a string with ``{sentence}`` and ``{mask}`` placeholders; when the prompt is too long,
  the *sentence* is truncated and the template always survives.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from sentsweep.errors import ConfigError

POOLINGS: tuple[str, ...] = ("cls", "mean", "max", "first_last", "prompt_mask")


def _masked_mean(hidden: Tensor, mask: Tensor) -> Tensor:
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


def pool(
    pooling: str,
    last_hidden: Tensor,
    attention_mask: Tensor,
    *,
    hidden_states: Sequence[Tensor] | None = None,
    mask_positions: Tensor | None = None,
) -> Tensor:
    """Pool token states ``(batch, seq, dim)`` into sentence embeddings ``(batch, dim)``."""
    if pooling == "cls":
        return last_hidden[:, 0]
    if pooling == "mean":
        return _masked_mean(last_hidden, attention_mask)
    if pooling == "max":
        blocked = last_hidden.masked_fill(
            ~attention_mask.bool().unsqueeze(-1), torch.finfo(last_hidden.dtype).min
        )
        return blocked.max(dim=1).values
    if pooling == "first_last":
        if hidden_states is None or len(hidden_states) < 2:
            raise ValueError("first_last pooling needs the model's hidden_states (output_hidden_states=True)")
        return _masked_mean((hidden_states[1] + hidden_states[-1]) / 2.0, attention_mask)
    if pooling == "prompt_mask":
        if mask_positions is None:
            raise ValueError("prompt_mask pooling needs the mask token positions")
        rows = torch.arange(last_hidden.size(0), device=last_hidden.device)
        return last_hidden[rows, mask_positions]
    raise ConfigError(f"unknown pooling '{pooling}'; choose one of {', '.join(POOLINGS)}", field="pooling")
