"""SNCSE search spaces (alpha < beta on every trial, paper defaults first) and the SNCSE configs."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from sentsweep.search_spaces import SEARCH_SPACES, get_search_space
from sentsweep.trainables.sncse import SNCSE

SNCSE_SPACE, SNCSE_DEMO_SPACE, SNCSE_ABLATION_SPACE = (SEARCH_SPACES[n] for n in ("sncse", "sncse-demo",
                                                                                  "sncse-ablation"))

REPO = Path(__file__).resolve().parents[2]


def _sample(spec, n: int, seed: int = 0) -> list[dict]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=10), direction="maximize"
    )
    study.enqueue_trial(spec.first_point)
    configs = []
    for i in range(n):
        trial = study.ask()
        configs.append(spec.sample(trial))
        study.tell(trial, float(i % 7))
    return configs


@pytest.mark.parametrize("spec", [SNCSE_SPACE, SNCSE_DEMO_SPACE])
def test_alpha_below_beta_on_every_trial_and_every_config_parses(spec) -> None:
    configs = _sample(spec, 60)
    assert configs[0] == spec.first_point
    bml = [c for c in configs if c["loss"] == "bml"]
    assert bml, "the BML branch was never sampled"
    for c in bml:
        assert 0.0 <= c["alpha"] <= 0.3 and c["alpha"] < c["beta"] <= 2.0
        assert 1e-5 <= c["lambda"] <= 1e-1
    for c in configs:
        if c["loss"] != "bml":
            assert not {"alpha", "beta", "lambda"} & set(c)  # conditional: only on the BML branch
        SNCSE.parse(c)  # every sampled point is a valid trial config


def test_first_point_is_the_papers_setting() -> None:
    assert SNCSE_SPACE.first_point == {
        "loss": "bml",
        "alpha": 0.1,
        "beta": 0.3,
        "lambda": 1e-3,
        "temperature": 0.05,
        "lr": 1e-5,
        "batch_size": 256,
    }
    assert SNCSE_SPACE.method == "sncse"
    assert SNCSE_DEMO_SPACE.first_point["batch_size"] == 32
    # the first point names exactly what the space suggests on its branch
    study = optuna.create_study()
    study.enqueue_trial(SNCSE_SPACE.first_point)
    trial = study.ask()
    SNCSE_SPACE.define_by_run(trial)
    assert trial.params == SNCSE_SPACE.first_point


def test_ablation_space_covers_the_four_variants() -> None:
    points = [SNCSE_ABLATION_SPACE.first_point, *SNCSE_ABLATION_SPACE.extra_points]
    assert sorted(p["loss"] for p in points) == ["bml", "infonce", "nl", "pl"]
    configs = _sample(SNCSE_ABLATION_SPACE, 5)
    assert all(set(c) == {"loss"} for c in configs)


@pytest.mark.parametrize(
    ("path", "space"),
    [
        ("configs/demo-sncse.yaml", SNCSE_DEMO_SPACE),
        ("configs/paper-sncse-bert-base.yaml", SNCSE_ABLATION_SPACE),
    ],
)
def test_sweep_configs_validate(path: str, space) -> None:
    from sentsweep.platform.config import load_sweep_config

    config = load_sweep_config(REPO / path)
    assert config.method == "sncse" and config.space_name == space.name
    for point in (space.first_point, *space.extra_points):
        trial = SNCSE.parse({**config.fixed, **point, "model": config.model}, source=path)
        assert trial.alpha < trial.beta


@pytest.mark.parametrize("spec", [SNCSE_SPACE, SNCSE_DEMO_SPACE, SNCSE_ABLATION_SPACE])
def test_spaces_pickle(spec) -> None:
    import pickle

    assert pickle.loads(pickle.dumps(spec.define_by_run)) == spec.define_by_run  # Tune saves its searcher


# -- a sweep's first point takes its model family's lambda ------------------------------
@pytest.mark.parametrize("space", ["sncse", "sncse-demo"])
@pytest.mark.parametrize(("family", "lam"), [("bert", 1e-3), ("roberta", 5e-4)])
def test_the_sweep_starts_at_its_model_familys_lambda(space: str, family: str, lam: float, tiny_bert_dir: Path,
                                                      tmp_path: Path) -> None:
    """SNCSE section 3.2: lambda 1e-3 for BERT, 5e-4 for RoBERTa, computed from the sweep's model when the sweep
    starts (resolve_specs)."""
    from transformers import RobertaConfig

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.specs import resolve_specs, space_points, validate_trials
    from sentsweep.platform.search.searcher import build_searcher

    if family == "bert":
        model = str(tiny_bert_dir)
    else:
        model = str(tmp_path / "roberta")  # config only: the family is read from the config alone
        RobertaConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2).save_pretrained(model)
    config = SweepConfig(name="s", method="sncse", search_space=space, model=model)
    trainable, spec = resolve_specs(config, "sweep.yaml")
    assert spec.first_point["lambda"] == lam
    assert {k: v for k, v in spec.first_point.items() if k != "lambda"} == \
        {k: v for k, v in get_search_space(space).first_point.items() if k != "lambda"}
    assert validate_trials(config, trainable, spec, "sweep.yaml")[0].lambda_ == lam
    suggested = build_searcher(config, spec.define_by_run, space_points(spec)).suggest("t1")
    assert suggested is not None and suggested["lambda"] == lam


def test_a_space_without_lambda_in_its_first_point_reads_no_model(tmp_path: Path) -> None:
    """The ablation space leaves lambda to the trial config (default_lambda at training), and lr and batch size set
    in fixed need no model size: no model config is read."""
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.specs import resolve_specs

    config = SweepConfig(name="s", method="sncse", search_space="sncse-ablation", model=str(tmp_path / "absent"),
                         fixed={"lr": 1e-5, "batch_size": 64})
    _, spec = resolve_specs(config, "sweep.yaml")
    assert spec.first_point == SNCSE_ABLATION_SPACE.first_point


@pytest.mark.parametrize(("space", "lr", "batch"), [("sncse", 5e-6, 128), ("sncse-demo", 5e-6, 32)])
def test_a_large_models_sweep_starts_at_the_large_setting(space: str, lr: float, batch: int, tmp_path: Path) -> None:
    """A 24-layer model's sweep starts at the paper's large setting (lr 5e-6, batch 128); the demo space keeps its
    CPU-sized first batch (32)."""
    from transformers import BertConfig

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.specs import resolve_specs

    model = str(tmp_path / "large")
    BertConfig(hidden_size=32, num_hidden_layers=24, num_attention_heads=2).save_pretrained(model)
    _, spec = resolve_specs(SweepConfig(name="s", method="sncse", search_space=space, model=model), "sweep.yaml")
    assert (spec.first_point["lr"], spec.first_point["batch_size"]) == (lr, batch)
    assert spec.first_point["lambda"] == 1e-3
