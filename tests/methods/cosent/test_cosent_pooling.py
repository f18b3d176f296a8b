"""CoSENT's NLI setting pools per model family, read from the model config (first_last BERT, cls RoBERTa)."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import BertConfig, RobertaConfig

from sentsweep.errors import ConfigError
from sentsweep.methods.cosent.pooling import model_type, nli_pooling
from sentsweep.trainables.cosent import COSENT


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Config-only model folders whose names say nothing about the family (the config alone decides)."""
    root = tmp_path_factory.mktemp("families")
    folders = {"bert": root / "model-a", "roberta": root / "model-b"}
    BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).save_pretrained(folders["bert"])
    RobertaConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).save_pretrained(folders["roberta"])
    return folders


def test_pooling_by_family() -> None:
    assert nli_pooling("bert") == "first_last"
    assert nli_pooling("roberta") == nli_pooling("xlm-roberta") == "cls"
    assert nli_pooling("distilbert") == "first_last"  # BERT's unless RoBERTa-like


def test_nli_setting_picks_the_pooling_from_the_model_config(configs: dict[str, Path]) -> None:
    assert model_type(str(configs["roberta"])) == "roberta"
    bert = COSENT.parse({"model": str(configs["bert"]), "train_data": "snli", "train_split": "dev"})
    roberta = COSENT.parse({"model": str(configs["roberta"]), "train_data": "snli", "train_split": "dev"})
    assert (bert.pooling, roberta.pooling) == ("first_last", "cls")
    assert bert.batch_size == 64 and bert.max_length == 128  # the rest of the NLI setting
    assert COSENT.parse(bert.model_dump(by_alias=True)).pooling == "first_last"  # stable through a round trip


def test_explicit_pooling_and_supervised_settings_are_kept(configs: dict[str, Path]) -> None:
    explicit = COSENT.parse({"model": str(configs["roberta"]), "train_data": "snli", "pooling": "mean"})
    assert explicit.pooling == "mean"
    assert COSENT.parse({"model": str(configs["roberta"]), "train_data": "stsb"}).pooling == "mean"


def test_unreadable_model_config_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="set pooling explicitly"):
        COSENT.parse({"model": str(tmp_path / "missing"), "train_data": "snli"})
