"""The multi-view method (the method contract, config, training, Ray Tune), its search spaces and configs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import optuna
import pytest

from sentsweep.data import SAMPLE_DIR
from sentsweep.errors import ConfigError
from sentsweep.methods.multiview.views import ViewPair
from sentsweep.search_spaces.multiview import (
    ALL_PAIRS,
    MULTIVIEW_DEMO_SPACE,
    MULTIVIEW_PAIRS_SPACE,
    MULTIVIEW_SPACE,
    VIEW_PAIRS,
)
from sentsweep.trainables.multiview import MULTIVIEW, MultiviewConfig
from sentsweep.trainables.registry import load_encoder
from tests.trainables.method_contract import MethodContract, TrainedRun

REPO = Path(__file__).resolve().parents[2]


def tiny(**overrides) -> dict:
    """A trial that trains in seconds on the bundled sample."""
    raw = {
        "views": "dep+const",
        "hidden_size": 8,
        "batch_size": 16,
        "corpus": "enwiki",
        "max_sentences": 96,
        "max_steps": 3,
        "eval_every": 2,
        "max_dev_pairs": 40,
        "max_vectors": 20_000,
        "test_tasks": "mr,sickr",
        "senteval_kfold": 2,
        "encode_batch_size": 64,
        "data_dir": str(SAMPLE_DIR),
        "amp": False,
    }
    raw.update(overrides)
    return raw


@pytest.fixture
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.getbasetemp() / "trainable-cache"
    monkeypatch.setenv("SENTSWEEP_CACHE", str(path))
    return path


# -- config --------------------------------------------------------------------------------------------
def test_defaults_are_the_papers() -> None:
    config = MultiviewConfig()
    assert config.views == ViewPair("dep", "const") and config.hidden_size == 2400
    assert (config.optimizer, config.lr, config.batch_size, config.max_grad_norm) == ("adam", 5e-4, 400, 5.0)
    assert config.freeze_vectors and config.weight_decay == 0.0 and config.metric == "sickr_trial"


def test_config_validation_names_the_field() -> None:
    parsed = MULTIVIEW.parse({"views": "const,dep"})
    assert parsed.views == ViewPair("dep", "const") and str(parsed.views) == "dep+const"
    assert parsed.settings().views is parsed.views  # parsed once, passed to the model as is
    assert parsed.model_dump()["views"] == "dep+const"  # logged and written back in the YAML form
    assert MULTIVIEW.parse({"dev_data": "stsb"}).metric == "stsb_dev"
    with pytest.raises(ConfigError, match="views"):
        MULTIVIEW.parse({"views": "dep+cky"})
    with pytest.raises(ConfigError, match="hidden_size"):
        MULTIVIEW.parse({"views": "seq+dep", "hidden_size": 9})
    with pytest.raises(ConfigError, match="frozen"):
        MULTIVIEW.parse({"word_vectors": "random"})
    with pytest.raises(ConfigError, match="constituency"):
        MULTIVIEW.parse({"constituency": "cky"})


# -- search spaces and configs -----------------------------------------------------------------------
def _sample(spec, n: int, seed: int = 0) -> list[dict]:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(spec.sample(trial))
        study.tell(trial, 0.0)
    return out


def test_spaces_cover_the_pairs_and_give_valid_configs() -> None:
    assert len(VIEW_PAIRS) == 6 and "dep+const" in VIEW_PAIRS and "seq+seq" in ALL_PAIRS
    seen = set()
    for spec in (MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE):
        for params in _sample(spec, 60):
            seen.add(params["views"])
            config = MULTIVIEW.parse(params)
            assert str(config.views) == params["views"]  # already canonical
            assert 1e-4 <= config.lr <= 2e-3
    assert seen == set(ALL_PAIRS)


def test_first_points_are_the_papers_setting() -> None:
    assert MULTIVIEW_SPACE.first_point == {
        "views": "dep+const",
        "hidden_size": 2400,
        "lr": 5e-4,
        "batch_size": 400,
        "freeze_vectors": True,
    }
    for spec in (MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE, MULTIVIEW_PAIRS_SPACE):
        study = optuna.create_study()
        study.enqueue_trial(spec.first_point)
        assert spec.sample(study.ask()) == spec.first_point
    assert [p["views"] for p in MULTIVIEW_PAIRS_SPACE.extra_points] == ["seq+dep", "seq+const", "seq+seq"]


@pytest.mark.parametrize("name", ["demo-multiview.yaml", "paper-multiview.yaml"])
def test_sweep_configs_validate(name: str) -> None:
    from sentsweep.platform.config import load_sweep_config

    config = load_sweep_config(REPO / "configs" / name)
    assert config.method == "multiview" and config.metric == "sickr_trial"
    space = {s.name: s for s in (MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE, MULTIVIEW_PAIRS_SPACE)}[
        config.space_name
    ]
    for point in (space.first_point, *space.extra_points):
        MULTIVIEW.parse({**config.fixed, **point}, source=name)


# -- training ------------------------------------------------------------------------------------------
class TestMultiviewMethod(MethodContract):
    method_name = "multiview"

    def tiny_settings(self, tiny_bert_dir: Path) -> dict:
        return tiny()

    def test_standalone_training_evaluates_and_saves(self, trained: TrainedRun) -> None:
        result, final, out = trained.result, trained.final, trained.output_dir
        assert result.state.step == 3 and len(result.state.history) == 2
        first = result.state.history[0]
        assert np.isfinite(first["train_loss"]) and "train_neighbour_acc" in first and "sickr_trial" in first
        assert {"mr_acc", "sickr_test", "senteval_avg", "sickr_trial"} <= set(final)
        settings = json.loads((out / "best" / "multiview.json").read_text())
        assert settings["views"] == ["dep", "const"] and "derived" in settings["parser_backend"]
        encoder = load_encoder(out)
        assert encoder.encode(["A man plays a guitar."]).shape == (1, 16)
        assert any(trained.cache.glob("trees/*/corpus-*.json.gz"))  # the parsed corpus is cached


def test_batches_are_consecutive_runs_in_shuffled_order(cache: Path) -> None:
    import torch

    task = MULTIVIEW.build_task(MULTIVIEW.parse(tiny(views="bow+seq", batch_size=10, max_sentences=45)))
    runs = task.batches(0, torch.Generator().manual_seed(0))
    assert sorted(runs) == [(0, 10), (10, 20), (20, 30), (30, 40), (40, 45)]
    assert runs != sorted(runs) or len(runs) < 3
    loss, diag = task.loss(runs[0])
    assert loss.ndim == 0 and 0 <= diag["neighbour_acc"] <= 100


def test_two_trials_under_ray_tune(tmp_path: Path, cache: Path) -> None:
    ray = pytest.importorskip("ray")
    from ray import tune

    from sentsweep.trainables.registry import get_trainable

    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        space = tiny(
            views=tune.grid_search(["dep+const", "bow+seq"]), max_steps=2, eval_every=1, test_tasks="sickr"
        )
        tuner = tune.Tuner(
            get_trainable("multiview").function,
            param_space=space,
            tune_config=tune.TuneConfig(num_samples=1, metric="sickr_trial", mode="max"),
            run_config=tune.RunConfig(storage_path=str(tmp_path / "ray"), name="mv", verbose=0),
        )
        results = tuner.fit()
    finally:
        ray.shutdown()
    assert len(results) == 2 and not results.errors
    for result in results:
        assert result.metrics["final"] == 1.0 and "sickr_test" in result.metrics
        assert np.isfinite(result.metrics["sickr_trial"])
        assert result.checkpoint is not None
