"""The multi-view method: the method contract, config, training, Ray Tune (its spaces: tests/search_spaces/)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sentsweep.data import SAMPLE_DIR
from sentsweep.errors import ConfigError
from sentsweep.methods.multiview.views import ViewPair
from sentsweep.trainables.multiview import MULTIVIEW, MultiviewConfig
from sentsweep.trainables.registry import load_encoder
from tests.trainables.method_contract import MethodContract, TrainedRun

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
def cache(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session's cache (the one Ray workers use too): GloVe vectors and parsed corpora are built once."""
    monkeypatch.setenv("SENTSWEEP_CACHE", str(session_cache))
    return session_cache


# -- config --------------------------------------------------------------------------------------------
def test_defaults_are_the_papers() -> None:
    config = MultiviewConfig()
    assert config.views == ViewPair("dep", "const") and config.hidden_size == 2400
    assert (config.optimizer, config.lr, config.batch_size, config.max_grad_norm) == ("adam", 5e-4, 400, 5.0)
    assert config.freeze_vectors and config.weight_decay == 0.0 and config.metric == "stsb_dev"
    assert config.trainable_init == "xavier"  # section 4.1's trainable vocabulary


def test_config_validation_names_the_field() -> None:
    parsed = MULTIVIEW.parse({"views": "const,dep"})
    assert parsed.views == ViewPair("dep", "const") and str(parsed.views) == "dep+const"
    assert parsed.settings().views is parsed.views  # parsed once, passed to the model as is
    assert parsed.model_dump()["views"] == "dep+const"  # logged and written back in the YAML form
    assert MULTIVIEW.parse({"dev_data": "sickr"}).metric == "sickr_trial"
    with pytest.raises(ConfigError, match="views"):
        MULTIVIEW.parse({"views": "dep+cky"})
    assert MULTIVIEW.parse({"views": ["seq", "dep"]}).views == ViewPair("seq", "dep")  # YAML's [seq, dep]
    with pytest.raises(ConfigError, match="views"):  # a field error, not a crash
        MULTIVIEW.parse({"views": {"seq": "dep"}})
    with pytest.raises(ConfigError, match="hidden_size"):
        MULTIVIEW.parse({"views": "seq+dep", "hidden_size": 9})
    with pytest.raises(ConfigError, match="frozen"):
        MULTIVIEW.parse({"word_vectors": "random"})
    with pytest.raises(ConfigError, match="constituency"):
        MULTIVIEW.parse({"constituency": "cky"})
    with pytest.raises(ConfigError, match="trainable_init must be one of xavier, vectors"):
        MULTIVIEW.parse({"freeze_vectors": False, "trainable_init": "glove"})
    glove_start = MULTIVIEW.parse({"freeze_vectors": False, "trainable_init": "vectors"})
    assert glove_start.settings().trainable_init == "vectors"


# -- training ------------------------------------------------------------------------------------------
class TestMultiviewMethod(MethodContract):
    method_name = "multiview"

    def tiny_settings(self, tiny_bert_dir: Path) -> dict:
        return tiny()

    def test_standalone_training_evaluates_and_saves(self, trained: TrainedRun) -> None:
        result, final, out = trained.result, trained.final, trained.output_dir
        assert result.state.step == 3 and len(result.state.history) == 2
        first = result.state.history[0]
        assert np.isfinite(first["train_loss"]) and "train_neighbour_acc" in first and "stsb_dev" in first
        assert {"mr_acc", "sickr_test", "senteval_avg", "stsb_dev"} <= set(final)
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


def test_two_trials_under_ray_tune(tmp_path: Path, cache: Path, ray_session: None) -> None:
    from ray import tune

    from sentsweep.trainables.registry import get_trainable

    space = tiny(views=tune.grid_search(["dep+const", "bow+seq"]), max_steps=2, eval_every=1, test_tasks="sickr")
    tuner = tune.Tuner(
        get_trainable("multiview").function,
        param_space=space,
        tune_config=tune.TuneConfig(num_samples=1, metric="stsb_dev", mode="max"),
        run_config=tune.RunConfig(storage_path=str(tmp_path / "ray"), name="mv", verbose=0),
    )
    results = tuner.fit()
    assert len(results) == 2 and not results.errors
    for result in results:
        assert result.metrics["final"] == 1.0 and "sickr_test" in result.metrics
        assert np.isfinite(result.metrics["stsb_dev"])
        assert result.checkpoint is not None


def test_a_trial_resumed_from_a_checkpoint_before_trainable_init_keeps_its_model(tmp_path: Path, cache: Path) -> None:
    """A checkpoint written before trainable_init existed has GloVe-started tables as wide as the vectors (50):
    the resumed trial rebuilds that model (the new default, Xavier at word_dim 300, could not load it)."""
    from sentsweep.trainables.checkpoints import MODEL_DIR, StoredFolder

    old = MULTIVIEW.parse(tiny(views="bow+seq", freeze_vectors=False, trainable_init="vectors", max_sentences=40))
    model_dir = tmp_path / "checkpoint_000001" / MODEL_DIR
    MULTIVIEW.build_task(old).save(model_dir)
    saved = json.loads((model_dir / "multiview.json").read_text())
    del saved["trainable_init"]  # as written before the field existed
    (model_dir / "multiview.json").write_text(json.dumps(saved))

    config = MULTIVIEW.parse(tiny(views="bow+seq", freeze_vectors=False, max_sentences=40))  # the trial's config
    assert config.trainable_init == "xavier"
    checkpoints = [StoredFolder.local(tmp_path / "missing"), StoredFolder.local(model_dir.parent)]
    resumed = MULTIVIEW.resumed_config(config, checkpoints)
    assert resumed.trainable_init == "vectors"
    MULTIVIEW.build_task(resumed).load(model_dir)  # the widths agree: the weights load
    with pytest.raises(RuntimeError, match="size mismatch"):
        MULTIVIEW.build_task(config).load(model_dir)  # what a resume did before this
    explicit = MULTIVIEW.parse(tiny(views="bow+seq", freeze_vectors=False, trainable_init="xavier"))
    assert MULTIVIEW.resumed_config(explicit, checkpoints) is explicit  # a trial that sets it keeps it
