"""CoSENT search spaces: ranges, conditional branches, and the paper's defaults as the first point."""

from __future__ import annotations

import optuna
import pytest

from sentsweep.errors import ConfigError
from sentsweep.search_spaces import SEARCH_SPACES, get_search_space
from sentsweep.trainables.cosent import CosentConfig
from tests.search_spaces.space_contract import sample_params


def test_cosent_space_ranges_and_types() -> None:
    for params in sample_params(SEARCH_SPACES["cosent"], 40):
        assert 1.0 <= params["scale"] <= 40.0
        assert params["pooling"] in {"mean", "cls", "max", "first_last"}
        assert 5e-6 <= params["lr"] <= 1e-4
        assert params["batch_size"] in {16, 32, 64}
        assert 0.0 <= params["warmup_ratio"] <= 0.2
        CosentConfig(**params)  # every point is a valid trial config


def test_loss_space_suggests_each_losss_own_parameter_only_on_its_branch() -> None:
    seen = set()
    for params in sample_params(SEARCH_SPACES["cosent-losses"], 60, seed=1):
        seen.add(params["loss"])
        assert ("scale" in params) == (params["loss"] == "cosent")
        assert ("epsilon" in params) == (params["loss"] == "contrastive")
        assert ("margin" in params) == (params["loss"] == "triplet")
        CosentConfig(**params)
    assert seen == {"cosent", "mse", "contrastive", "triplet"}


@pytest.mark.parametrize("name", ["cosent", "cosent-losses"])
def test_first_point_is_the_paper_default_and_names_the_suggested_parameters(name: str) -> None:
    spec = SEARCH_SPACES[name]
    assert spec.first_point["scale"] == 20.0 and spec.first_point["pooling"] == "mean"
    assert spec.first_point["lr"] == 2e-5 and spec.first_point["batch_size"] == 16
    assert spec.first_point["warmup_ratio"] == 0.1
    study = optuna.create_study()
    study.enqueue_trial(spec.first_point)
    trial = study.ask()
    assert spec.sample(trial) == spec.first_point


def test_unknown_space_names_the_field() -> None:
    with pytest.raises(ConfigError, match="search_space"):
        get_search_space("nope")
