"""The SNCSE encoder: two prompt templates on one transformer, an MLP for training only.

SNCSE (seed paper 002, section 3) encodes each sentence ``s`` three times, with dropout on:

- anchor:        ``This sentence : " s " means [MASK] .``
- positive:      ``This sentence of " s " means [MASK] .`` (same text, another dropout mask)
- soft negative: the positive template filled with ``neg(s)``.

The embedding is the last hidden state at the mask token (``[MASK]`` or ``<mask>``, taken from the
tokenizer). " ." is appended to a sentence that does not end in punctuation (in training and in
evaluation, as the reference does). The sentence, never the template, is truncated to fit
``max_length`` (32 in the paper), a *training* length only: evaluation (dev selection, the test suite,
the diagnostics and the saved model's ``sentsweep_encoder.json``) uses ``eval_max_length``, by default
the model's own limit, as the reference and SimCSE's SentEval batcher (no max length) do. Cut at 32,
about one STS pair in five loses words (the template takes 10 BERT tokens). During training an MLP
(dense + tanh) sits on the mask state; evaluation uses the anchor template and the raw mask state.

Built from :mod:`sentsweep.methods.encoders`: the anchor view is a :class:`TransformerEncoder` with
``prompt_mask`` pooling (so the saved model is an ordinary prompt encoder), the positive view a second
:class:`PromptTokenizer` on the same tokenizer. The three views of a batch go through the transformer
as one stacked batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from sentsweep.methods.encoders import (
    ROBERTA_FAMILIES,
    EncoderSettings,
    PromptTokenizer,
    TransformerEncoder,
    read_model_config,
    with_eval_max_length,
)
from sentsweep.methods.precision import EVAL_AMP
from sentsweep.methods.sncse.punctuation import with_final_punctuation

ANCHOR_TEMPLATE = 'This sentence : " {sentence} " means {mask} .'
POSITIVE_TEMPLATE = 'This sentence of " {sentence} " means {mask} .'
MLP_FILE = "sncse_mlp.safetensors"
SNCSE_FILE = "sncse.json"
#: lambda (eq. 7) by encoder family, from the model config (never from the path).
DEFAULT_LAMBDA: dict[str, float] = {"bert": 1e-3, "roberta": 5e-4}
#: lr and batch size by model size (SNCSE's experiment setup: "For base models, we adopt batch size of 256 and initial
#: learning rate of 1e-5, while for large models, we adopt batch size of 128 and learning rate of 5e-6").
SIZE_SETTINGS: dict[str, dict[str, float | int]] = {"base": {"lr": 1e-5, "batch_size": 256},
                                                    "large": {"lr": 5e-6, "batch_size": 128}}
#: The fewest encoder layers that make a model "large" (BERT-large and RoBERTa-large have 24; base models 12).
LARGE_MIN_LAYERS = 24
#: Std of the MLP's normal init when the model config states no ``initializer_range`` (BERT's value).
MLP_INIT_STD = 0.02


def default_lambda(family: str) -> float:
    """The paper's BML weight for an encoder family: 5e-4 for RoBERTa-like models, else 1e-3 (BERT)."""
    return DEFAULT_LAMBDA["roberta"] if family in ROBERTA_FAMILIES else DEFAULT_LAMBDA["bert"]


def model_size(config: Any) -> str:
    """``large`` for a model config with at least :data:`LARGE_MIN_LAYERS` layers (BERT-large, RoBERTa-large: 24),
    else ``base``."""
    layers = int(getattr(config, "num_hidden_layers", 0) or 0)
    return "large" if layers >= LARGE_MIN_LAYERS else "base"


def size_setting(model_name_or_path: str) -> dict[str, float | int]:
    """The paper's lr and batch size for the size of ``model_name_or_path`` (:data:`SIZE_SETTINGS`), read from its
    config."""
    config = read_model_config(model_name_or_path, "to choose SNCSE's lr and batch size by model size (base: 1e-5 "
                               "and 256, large: 5e-6 and 128); set lr and batch_size explicitly")
    return dict(SIZE_SETTINGS[model_size(config)])


def fill_prompts(prompt: PromptTokenizer, sentences: Sequence[str]) -> list[str]:
    """``prompt.render(prompt.fit(s))`` for every sentence, with batched tokenizer calls.

    :meth:`PromptTokenizer.fit` tokenizes one sentence at a time (about three calls for a sentence that
    must be cut; with SNCSE's max length of 32, most Wikipedia sentences must). Here the whole batch is
    checked, cut at the sentence budget and checked again in three batched calls; a prompt that still
    does not fit goes through ``fit`` itself, so the result is always ``fit``'s.
    """
    tokenizer, limit = prompt.tokenizer, prompt.max_length

    def lengths(texts: list[str]) -> list[int]:
        if not texts:
            return []
        ids = tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]
        return [len(row) for row in ids]

    filled = [prompt.render(s) for s in sentences]
    long = [i for i, n in enumerate(lengths(filled)) if n > limit]
    if not long:
        return filled
    budget = prompt.sentence_budget
    spans = tokenizer([sentences[i] for i in long], add_special_tokens=False, return_offsets_mapping=True)
    cut = {
        i: sentences[i][: offsets[budget - 1][1]]
        for i, offsets in zip(long, spans["offset_mapping"], strict=True)
        if len(offsets) > budget
    }
    fits = dict(zip(cut, lengths([prompt.render(c) for c in cut.values()]), strict=True))
    for i in long:
        if i in cut and fits[i] <= limit:
            filled[i] = prompt.render(cut[i])
        else:
            filled[i] = prompt.render(prompt.fit(sentences[i]))
    return filled


def identical_soft_negatives(batch: Mapping[str, Tensor], n: int) -> Tensor:
    """Which of the ``n`` rows of a :meth:`SncseModel.tokenize_views` batch have a soft-negative input (z3) whose
    token ids equal the positive's (z2): bool ``(n,)``.

    Training cuts ``s`` and ``neg(s)`` to the sentence budget separately, as the reference's ``train_SNCSE.py``
    does; when the negation edit lies past the cut, both prompts are the same text and z3 differs from z2 by
    dropout only, so BML (eq. 5) asks ``cos(z1, z2) - cos(z1, z3) >= alpha`` of two copies of one input. Kept
    as the reference has it, counted (``negation_truncated_share``). No soft negatives: all False."""
    ids = batch["input_ids"]
    if ids.size(0) < 3 * n:
        return torch.zeros(n, dtype=torch.bool)
    return (ids[n : 2 * n] == ids[2 * n : 3 * n]).all(dim=1).cpu()


class MLPHead(nn.Module):
    """Dense + tanh on the mask state (SimCSE's training-only MLP, as SNCSE uses it).

    Initialised as the reference: SimCSE's and SNCSE's ``cl_init`` build the MLP inside the
    ``BertPreTrainedModel`` and run its ``init_weights``, i.e. weights ~ N(0, ``initializer_range``) (0.02
    for BERT and RoBERTa) and zero bias, not PyTorch's default uniform Kaiming init of ``nn.Linear``.
    """

    def __init__(self, dim: int, init_std: float = MLP_INIT_STD) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)
        self.activation = nn.Tanh()
        nn.init.normal_(self.dense.weight, mean=0.0, std=init_std)
        nn.init.zeros_(self.dense.bias)

    def forward(self, features: Tensor) -> Tensor:
        return self.activation(self.dense(features))


class SncseModel(nn.Module):
    """The SNCSE encoder; ``forward`` gives training views (with MLP), ``encode`` evaluation embeddings.

    ``max_length`` bounds the training prompts; ``eval_max_length`` (None: the model's limit) the
    evaluation prompts of :meth:`encode` and the saved encoder.

    >>> model = SncseModel("minilm", max_length=32)          # doctest: +SKIP
    >>> z1, z2, z3 = model(["A cat."], ["A cat not ..."])    # doctest: +SKIP
    >>> model.encode(["A cat sits."]).shape                  # doctest: +SKIP
    (1, 384)
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        max_length: int = 32,
        eval_max_length: int | None = None,
        device: str | torch.device | None = None,
        eval_amp: bool = EVAL_AMP,
        encoder: TransformerEncoder | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder or with_eval_max_length(
            TransformerEncoder(
                model_name_or_path,
                EncoderSettings(pooling="prompt_mask", max_length=max_length, prompt_template=ANCHOR_TEMPLATE),
                device=device,
                eval_amp=eval_amp,
            ),
            eval_max_length,
        )
        assert self.encoder.prompt is not None
        self.max_length = max_length
        self.anchor_prompt = PromptTokenizer(self.encoder.tokenizer, ANCHOR_TEMPLATE, max_length)
        self.positive_prompt = PromptTokenizer(self.encoder.tokenizer, POSITIVE_TEMPLATE, max_length)
        init_std = float(getattr(self.encoder.config, "initializer_range", MLP_INIT_STD))
        self.mlp = MLPHead(self.encoder.dim, init_std).to(self.encoder.device)

    @property
    def family(self) -> str:
        """The encoder family from the model config (``bert``, ``roberta``, ...)."""
        return self.encoder.family

    @property
    def device(self) -> torch.device:
        return self.encoder.device

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @property
    def eval_max_length(self) -> int:
        """The token limit of evaluation prompts (and of the saved encoder)."""
        return self.encoder.settings.max_length

    def tokenize_views(
        self, sentences: Sequence[str], negations: Sequence[str] | None = None
    ) -> dict[str, Tensor]:
        """One padded training batch (prompts of at most ``max_length`` tokens): anchors, then positives,
        then (when given) the soft negatives."""
        texts = [with_final_punctuation(s) for s in sentences]
        prompts = fill_prompts(self.anchor_prompt, texts) + fill_prompts(self.positive_prompt, texts)
        if negations is not None:
            if len(negations) != len(sentences):
                raise ValueError(f"{len(sentences)} sentences but {len(negations)} negations")
            prompts += fill_prompts(self.positive_prompt, [with_final_punctuation(n) for n in negations])
        tokenizer = self.encoder.tokenizer
        batch = dict(tokenizer(prompts, padding=True, truncation=False, return_tensors="pt"))
        is_mask = batch["input_ids"] == tokenizer.mask_token_id
        if not bool((is_mask.sum(dim=1) == 1).all()):
            raise ValueError("every SNCSE prompt must hold exactly one mask token")
        batch["mask_positions"] = is_mask.int().argmax(dim=1)
        return batch

    def forward(
        self, sentences: Sequence[str], negations: Sequence[str] | None = None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """``(z1, z2, z3)``: anchor, positive and soft-negative views after the MLP (``z3`` None
        without negations), from one forward pass of the stacked batch."""
        return self.embed_views(self.tokenize_views(sentences, negations), len(sentences))

    def embed_views(self, batch: dict[str, Tensor], n: int) -> tuple[Tensor, Tensor, Tensor | None]:
        """``(z1, z2, z3)`` of a batch from :meth:`tokenize_views` of ``n`` sentences (one forward pass)."""
        pooled = self.mlp(self.encoder(batch))
        z1, z2 = pooled[:n], pooled[n : 2 * n]
        z3 = pooled[2 * n :] if pooled.size(0) > 2 * n else None
        return z1, z2, z3

    @torch.no_grad()
    def encode(
        self, sentences: Sequence[str], batch_size: int = 128, *, normalize: bool = False
    ) -> np.ndarray:
        """Evaluation embeddings: the anchor template's raw mask state (no MLP), float32 numpy; prompts of up
        to ``eval_max_length`` tokens (whole STS sentences at the default)."""
        return self.encoder.encode(
            [with_final_punctuation(s) for s in sentences], batch_size=batch_size, normalize=normalize
        )

    # -- persistence ---------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """The encoder as a prompt-mask encoder folder, plus the training MLP and SNCSE's templates."""
        directory = self.encoder.save(directory)
        save_file(
            {k: v.contiguous().cpu() for k, v in self.mlp.state_dict().items()}, str(directory / MLP_FILE)
        )
        meta = {
            "anchor_template": ANCHOR_TEMPLATE,
            "positive_template": POSITIVE_TEMPLATE,
            "append_period": True,
            "family": self.family,
            "train_max_length": self.max_length,
            "eval_max_length": self.eval_max_length,
        }
        (directory / SNCSE_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        return directory

    def load_weights(self, directory: str | Path) -> None:
        """Load encoder (and, when saved, MLP) weights written by :meth:`save` into this model."""
        directory = Path(directory)
        module = self.encoder.model
        state = load_file(str(directory / "model.safetensors"), device=str(self.device))
        module.load_state_dict(state)
        mlp_file = directory / MLP_FILE
        if mlp_file.exists():
            self.mlp.load_state_dict(load_file(str(mlp_file), device=str(self.device)))

    @classmethod
    def load(
        cls, directory: str | Path, *, device: str | torch.device | None = None, **kwargs: Any
    ) -> SncseModel:
        """Rebuild a model written by :meth:`save` (weights, templates, max lengths, MLP).

        A folder saved before evaluation and training lengths were separate (its ``sncse.json`` has no
        ``eval_max_length``) stored the training length (32) as the encoder's: it is replaced by the
        model's limit, so that loaded models, too, encode whole sentences."""
        directory = Path(directory)
        meta = json.loads((directory / SNCSE_FILE).read_text()) if (directory / SNCSE_FILE).exists() else {}
        encoder = TransformerEncoder.load(directory, device=device)
        if "eval_max_length" not in meta:
            encoder = with_eval_max_length(encoder, None)
        kwargs.setdefault("max_length", int(meta.get("train_max_length", 32)))
        model = cls(str(directory), encoder=encoder, **kwargs)
        mlp_file = Path(directory) / MLP_FILE
        if mlp_file.exists():
            model.mlp.load_state_dict(load_file(str(mlp_file), device=str(model.device)))
        return model
