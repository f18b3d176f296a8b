"""CoSENT search spaces: ranges, conditional branches, and the paper's defaults as the first point (for the
sweep's own settings: the NLI setting by model family, the cross-encoder without pooling)."""

from __future__ import annotations

import pickle
from pathlib import Path

import optuna
import pytest
from transformers import RobertaConfig

from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig, load_sweep_config
from sentsweep.platform.driver.specs import resolve_specs, space_points, trial_param_space, validate_trials
from sentsweep.platform.search.searcher import build_searcher
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


# -- the space a sweep runs: its first point from the sweep's own settings (search_spaces/spec.py) ------------
REPO = Path(__file__).resolve().parents[2]
POOLINGS = ["mean", "cls", "max", "first_last"]
SEARCHED = ("scale", "pooling", "lr", "batch_size", "warmup_ratio")


@pytest.fixture(scope="module")
def roberta_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config-only RoBERTa folder (the NLI setting reads the family from the config alone)."""
    folder = tmp_path_factory.mktemp("roberta") / "model"
    RobertaConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).save_pretrained(folder)
    return folder


def _searched(config: CosentConfig) -> dict[str, object]:
    return {key: getattr(config, key) for key in SEARCHED}


@pytest.mark.parametrize(("family", "pooling"), [("bert", "first_last"), ("roberta", "cls")])
def test_the_nli_sweep_starts_at_the_papers_nli_setting(family: str, pooling: str, tiny_bert_dir: Path,
                                                         roberta_config_dir: Path) -> None:
    """CoSENT section 4.1: NLI training with batch 64, first_last pooling for BERT, cls for RoBERTa. The first
    trial of configs/paper-cosent-nli.yaml is that setting, not the STS defaults (mean, 16)."""
    model = str(tiny_bert_dir if family == "bert" else roberta_config_dir)
    source = REPO / "configs" / "paper-cosent-nli.yaml"
    config = load_sweep_config(source).model_copy(update={"model": model})
    trainable, space = resolve_specs(config, str(source))
    paper = _searched(CosentConfig(train_data="snli", model=model))
    assert paper["pooling"] == pooling and paper["batch_size"] == 64
    first = validate_trials(config, trainable, space, str(source))[0]
    assert _searched(first) == paper  # type: ignore[arg-type]
    suggested = build_searcher(config, space.define_by_run, space_points(space)).suggest("t1")
    assert suggested is not None and _searched(CosentConfig(**{**trial_param_space(config), **suggested})) \
        == paper
    pooling_space = get_search_space("cosent-pooling").for_settings(trial_param_space(config))
    assert [p["pooling"] for p in space_points(pooling_space)] == [pooling, *(p for p in POOLINGS if p != pooling)]


def test_the_nli_paper_config_selects_on_nli_dev_and_logs_stsb_dev(tiny_bert_dir: Path) -> None:
    """The CoSENT reference selects its NLI transfer on NLI dev (no STS data); configs/paper-cosent-nli
    ranks trials and checkpoints by nli_dev (SNLI dev) and scores STS-B dev beside it, for comparison only."""
    source = REPO / "configs" / "paper-cosent-nli.yaml"
    config = load_sweep_config(source).model_copy(update={"model": str(tiny_bert_dir)})
    assert (config.metric, config.fixed["dev_data"], config.fixed["extra_dev_data"]) == ("nli_dev", "nli", ["stsb"])
    trainable, space = resolve_specs(config, str(source))
    trials = validate_trials(config, trainable, space, str(source))
    assert {(t.dev_data, t.dev_metric, t.metric, tuple(t.extra_dev_data)) for t in trials} == \
        {("nli", "nli_dev", "nli_dev", ("stsb",))}
    dev = trials[0].model_copy(update={"max_dev_pairs": 4}).dev_evaluator(4)
    assert [s.key for s in dev.sets] == ["nli_dev", "stsb_dev"]


def test_a_cross_encoder_sweep_does_not_search_pooling() -> None:
    """The cross-encoder scores the [CLS] state (eq. 11): its sweep searches lambda, lr, batch size and warmup."""
    config = SweepConfig(name="s", method="cosent", fixed={"architecture": "cross"})
    trainable, space = resolve_specs(config, "sweep.yaml")
    assert space.first_point == {"scale": 20.0, "lr": 2e-5, "batch_size": 16, "warmup_ratio": 0.1}
    (first,) = validate_trials(config, trainable, space, "sweep.yaml")
    assert first.architecture == "cross" and first.pooling is None
    for params in sample_params(space, 20):
        assert set(params) == {"scale", "lr", "batch_size", "warmup_ratio"}
        CosentConfig(architecture="cross", **params)
    study = optuna.create_study()
    study.enqueue_trial(space.first_point)
    assert space.sample(study.ask()) == space.first_point
    assert pickle.loads(pickle.dumps(space.define_by_run)) == space.define_by_run  # Tune pickles the searcher
    refusals = {"cosent-pooling": "samples nothing under this sweep's settings: pooling .*when architecture = 'bi'",
                "cosent-losses": "searches the loss, which architecture 'cross' does not take"}
    for name, why in refusals.items():
        with pytest.raises(ConfigError, match=f"space '{name}' {why}") as err:
            resolve_specs(config.model_copy(update={"search_space": name}), "sweep.yaml")
        assert err.value.field == "search_space" and err.value.file == "sweep.yaml"


@pytest.mark.parametrize("loss", ["mse", "contrastive", "triplet", "softmax"])
def test_a_space_searching_lambda_under_a_fixed_baseline_loss_is_refused(loss: str) -> None:
    """With ``fixed.loss`` a baseline, the ``cosent`` space searched lambda, which that loss does
    not take (a parameter that does nothing is never searched); ``cosent-losses`` stays allowed."""
    config = SweepConfig(name="s", method="cosent", fixed={"loss": loss, "train_data": "snli"} if loss == "softmax"
                         else {"loss": loss})
    with pytest.raises(ConfigError, match=f"space 'cosent' searches scale, which loss '{loss}' .* does not take"):
        resolve_specs(config, "sweep.yaml")
    resolve_specs(config.model_copy(update={"search_space": "cosent-losses"}), "sweep.yaml")


def test_a_baseline_setting_the_loss_does_not_take_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """The contrastive baseline measures the cosine (eq. 2): a distance set for it does nothing, as a threshold or a
    mining rule does for CoSENT's own loss."""
    with caplog.at_level("WARNING"):
        CosentConfig(loss="contrastive", distance="cosine", positive_threshold=3.0)
        CosentConfig(loss="cosent", mining="random", positive_threshold=3.0)
        CosentConfig(loss="triplet", distance="cosine", mining="random", positive_threshold=3.0)  # all taken
    assert [r.getMessage() for r in caplog.records] == [
        "CosentConfig: loss 'contrastive' does not use distance; it has no effect",
        "CosentConfig: loss 'cosent' does not use mining, positive_threshold; they have no effect"]


def test_a_loss_setting_the_loss_does_not_take_is_named_in_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    from sentsweep.trainables.sncse import SncseConfig

    with caplog.at_level("WARNING"):
        CosentConfig(loss="mse", scale=5.0, epsilon=0.1)
        SncseConfig(loss="infonce", alpha=0.05, **{"lambda": 0.01})
        CosentConfig(scale=5.0)  # CoSENT takes lambda: nothing to say
        SncseConfig(alpha=0.05)
    assert [r.getMessage() for r in caplog.records] == [
        "CosentConfig: loss 'mse' does not use scale, epsilon; they have no effect",
        "SncseConfig: loss 'infonce' does not use alpha, lambda; they have no effect"]


def test_sncse_negation_and_diagnostic_settings_nothing_uses_are_named_in_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    """Plain InfoNCE negates no corpus: only the diagnostics negate, in one process. With the diagnostics off too,
    no negation setting does anything, and no diagnostic setting does with them off."""
    from sentsweep.trainables.sncse import SncseConfig

    with caplog.at_level("WARNING"):
        SncseConfig(loss="infonce", negation_processes=4, negation_batch_size=64)
        SncseConfig(loss="infonce", diagnostics=False, negation_rules="reference", diagnostic_top_k=5)
        SncseConfig(negation_processes=4, diagnostic_tasks="sickr")  # BML with diagnostics: both are used
    assert [r.getMessage() for r in caplog.records] == [
        "SncseConfig: loss 'infonce' negates no corpus, so nothing uses negation_processes; it has no effect",
        "SncseConfig: diagnostics are off, so nothing uses diagnostic_top_k; it has no effect",
        "SncseConfig: loss 'infonce' negates no corpus, so nothing uses negation_rules; it has no effect"]
