"""SNCSE search spaces (alpha < beta on every trial, paper defaults first) and the SNCSE configs."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from sentsweep.search_spaces.sncse import (
    PAPER_DEFAULTS,
    SNCSE_ABLATION_SPACE,
    SNCSE_DEMO_SPACE,
    SNCSE_SPACE,
)
from sentsweep.trainables.sncse import SNCSE

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
    assert PAPER_DEFAULTS == {
        "loss": "bml",
        "alpha": 0.1,
        "beta": 0.3,
        "lambda": 1e-3,
        "temperature": 0.05,
        "lr": 1e-5,
        "batch_size": 256,
    }
    assert SNCSE_SPACE.first_point == PAPER_DEFAULTS and SNCSE_SPACE.method == "sncse"
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

    assert pickle.loads(pickle.dumps(spec.define_by_run)) is spec.define_by_run  # Tune saves its searcher
