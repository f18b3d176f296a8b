"""The SNCSE method: the method contract, typed config, the run's diagnostics, and a 2-trial Ray Tune run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sentsweep.errors import ConfigError
from sentsweep.trainables.sncse import SNCSE, SncseConfig, SncseTask, corpus_sentences
from tests.trainables.method_contract import MethodContract, TrainedRun

pytestmark = pytest.mark.usefixtures("private_cache")  # never the user's ~/.cache/sentsweep


def _tiny(tiny_bert_dir: Path, **overrides: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "model": str(tiny_bert_dir),
        "batch_size": 4,
        "max_sentences": 24,
        "max_steps": 2,
        "eval_every": 1,
        "max_dev_pairs": 20,
        "test_tasks": "stsb_test",
        "diagnostic_sentences": 16,
        "diagnostic_tasks": "stsb_test",
        "diagnostic_top_k": 3,
        "device": "cpu",
    }
    raw.update(overrides)
    return raw


def test_defaults_are_the_papers() -> None:
    c = SncseConfig()
    assert (c.loss, c.alpha, c.beta, c.lambda_, c.temperature) == ("bml", 0.1, 0.3, None, 0.05)
    assert (c.lr, c.batch_size, c.max_length, c.warmup_ratio, c.weight_decay) == (1e-5, 256, 32, 0.0, 0.0)
    assert (c.seed, c.eval_every, c.metric, c.corpus) == (42, 125, "stsb_dev", "enwiki")
    loop = c.loop_config()
    assert loop.warmup_ratio == 0.0 and loop.lr == 1e-5


def _config_only_model(folder: Path, layers: int) -> str:
    """A model folder holding only a BERT config of ``layers`` layers (the size is read from the config alone)."""
    from transformers import BertConfig

    BertConfig(hidden_size=32, num_hidden_layers=layers, num_attention_heads=2).save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize(("layers", "lr", "batch"), [(12, 1e-5, 256), (24, 5e-6, 128)])
def test_lr_and_batch_size_follow_the_model_size(tmp_path: Path, layers: int, lr: float, batch: int) -> None:
    """The paper's setup: "For base models, we adopt batch size of 256 and initial learning rate of 1e-5, while for
    large models, we adopt batch size of 128 and learning rate of 5e-6"; set values are kept."""
    model = _config_only_model(tmp_path / "m", layers)
    config = SNCSE.parse({"model": model})
    assert (config.lr, config.batch_size) == (lr, batch)
    assert config.loop_config().lr == lr
    kept = SNCSE.parse({"model": model, "lr": 3e-5})
    assert (kept.lr, kept.batch_size) == (3e-5, batch)
    assert SNCSE.parse({"model": model, "lr": 3e-5, "batch_size": 64}).batch_size == 64


def test_an_unreadable_model_with_lr_unset_names_the_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model size") as caught:
        SNCSE.parse({"model": str(tmp_path / "absent")})
    assert caught.value.field == "model"
    set_both = SNCSE.parse({"model": str(tmp_path / "absent"), "lr": 1e-5, "batch_size": 256})
    assert set_both.lr == 1e-5  # nothing to choose: the config is not read


def test_lambda_by_alias_or_name() -> None:
    assert SNCSE.parse({"lambda": 5e-4}).lambda_ == 5e-4
    assert SNCSE.parse({"lambda_": 2e-3}).lambda_ == 2e-3


@pytest.mark.parametrize(("alpha", "beta"), [(0.3, 0.3), (0.5, 0.2)])
def test_alpha_must_be_below_beta(alpha: float, beta: float) -> None:
    with pytest.raises(ConfigError, match="alpha < beta") as info:
        SNCSE.parse({"alpha": alpha, "beta": beta}, source="configs/x.yaml")
    assert info.value.field == "beta" and info.value.file == "configs/x.yaml"


def test_unknown_loss_and_field_are_named() -> None:
    with pytest.raises(ConfigError) as info:
        SNCSE.parse({"loss": "triplet"})
    assert info.value.field == "loss"
    with pytest.raises(ConfigError) as info:
        SNCSE.parse({"lamda": 1e-3})
    assert info.value.field == "lamda"


def test_negation_rules_thread_through_the_config_and_the_params() -> None:
    from sentsweep.trainables.trial_config import public_params

    assert SNCSE.parse({}).negation_rules == "project"
    config = SNCSE.parse({"negation_rules": "reference", "negation_processes": 2})
    assert config.negation_rules == "reference" and public_params(config)["negation_rules"] == "reference"
    negator = config.negator()
    assert (negator.rules, negator.n_process) == ("reference", 2)
    assert config.negator(processes=1).n_process == 1


def test_an_unknown_negation_rule_set_is_one_line_naming_the_field() -> None:
    with pytest.raises(ConfigError) as info:
        SNCSE.parse({"negation_rules": "paper"}, source="configs/x.yaml")
    assert info.value.field == "negation_rules" and info.value.file == "configs/x.yaml"
    assert "\n" not in str(info.value) and "known: project, reference" in str(info.value)


class TestSncseMethod(MethodContract):
    method_name = "sncse"

    def tiny_settings(self, tiny_bert_dir: Path) -> dict[str, Any]:
        return _tiny(tiny_bert_dir)

    def test_standalone_run_writes_weights_and_diagnostics(self, trained: TrainedRun) -> None:
        result, final, out = trained.result, trained.final, trained.output_dir
        assert result.state.step == 2 and len(result.state.history) == 2
        row = result.state.history[0]
        assert {"stsb_dev", "train_loss", "train_cos_pos", "train_cos_neg", "train_bml",
                "train_negation_truncated_share"} <= set(row)
        assert final["final"] == 1.0 and final["lambda"] == 1e-3  # BERT family
        assert 0.0 <= final["negation_fallback_share"] <= 1.0 and final["negation_total"] == 24
        assert -1.0 <= final["diag_negation_cos_mean"] <= 1.0 and "diag_random_cos_mode" in final
        diag = out / "diagnostics"
        for name in (
            "similarity_hist.png",
            "similarity_summary.csv",
            "similarity_summary.json",
            "rank_errors.csv",
            "rank_errors.md",
            "negation_stats.json",
            "negation_pairs.jsonl",
        ):
            assert (diag / name).is_file(), name
        assert (diag / "similarity_hist.png").read_bytes()[:4] == b"\x89PNG"
        summary = json.loads((diag / "similarity_summary.json").read_text())
        assert set(summary) == {"negation", "random"} and summary["negation"]["n"] == 16
        assert "rank_error" in (diag / "rank_errors.md").read_text()
        assert (out / "best" / "sncse_mlp.safetensors").is_file()
        assert any("fallback" in line for line in trained.log)  # the rule statistics are logged


def test_infonce_needs_no_negations_and_lambda_can_be_set(tiny_bert_dir: Path) -> None:
    config = SNCSE.parse(_tiny(tiny_bert_dir, loss="infonce", **{"lambda": 0.02}))
    task = SNCSE.build_task(config)
    assert isinstance(task, SncseTask) and task.negations is None and task.lam == 0.02
    loss, diag = task.loss(task.batches(0, __import__("torch").Generator().manual_seed(0))[0])
    assert loss.ndim == 0 and "cos_neg" not in diag


def test_a_reference_row_trains_on_the_reference_negations(tiny_bert_dir: Path) -> None:
    """``negation_rules: reference`` reaches the task's negator; the histogram it logs is the reference's rules."""
    pytest.importorskip("spacy")
    task = SNCSE.build_task(SNCSE.parse(_tiny(tiny_bert_dir, negation_rules="reference", max_sentences=8)))
    assert task.negator is not None and task.negator.rules == "reference"
    stats = task.negation_stats
    assert stats is not None and stats.rules == "reference" and stats.total == 8
    assert set(stats.counts) <= set(task.negator.rule_set.rules)
    assert "negation_ref_aux" in stats.as_metrics()


def test_batches_drop_a_last_batch_of_one(tiny_bert_dir: Path) -> None:
    import torch

    task = SNCSE.build_task(SNCSE.parse(_tiny(tiny_bert_dir, loss="infonce", max_sentences=9, batch_size=4)))
    sizes = [len(b) for b in task.batches(0, torch.Generator().manual_seed(1))]
    assert sizes == [4, 4]


# Real Ray, two trials (about 30 s on 2 cores): in the default run, as the 2-trial Tune test of SNCSE.
def test_two_trials_under_ray_tune(
    ray_session: None, tiny_bert_dir: Path, tmp_path: Path
) -> None:
    from ray import tune

    from sentsweep.trainables.registry import get_trainable

    space = _tiny(
        tiny_bert_dir,
        loss=tune.grid_search(["bml", "infonce"]),
        max_steps=2,
        eval_every=1,
        diagnostic_tasks="",
        data_dir=None,
    )
    tuner = tune.Tuner(
        get_trainable("sncse").function,
        param_space=space,
        tune_config=tune.TuneConfig(metric="stsb_dev", mode="max", num_samples=1),
        run_config=tune.RunConfig(storage_path=str(tmp_path / "ray"), name="sncse-test", verbose=0),
    )
    results = tuner.fit()
    assert len(results) == 2 and not results.errors
    for result in results:
        history = result.metrics_dataframe
        assert list(history["step"]) == [1.0, 2.0, 2.0]  # two evaluations, then the final report
        assert result.metrics["final"] == 1.0 and "stsb_test" in result.metrics
        assert result.checkpoint is not None
        with result.checkpoint.as_directory() as ckpt:
            assert (Path(ckpt) / "state.pt").is_file() and (
                Path(ckpt) / "model" / "sncse_mlp.safetensors"
            ).is_file()
        output = Path(result.path) / "output"
        assert (output / "diagnostics" / "similarity_hist.png").is_file()
        assert (output / "final_metrics.json").is_file()
    losses = sorted(r.config["loss"] for r in results)
    assert losses == ["bml", "infonce"]


def test_a_corpus_file_is_one_sentence_a_line(tmp_path: Path) -> None:
    """wiki1m's format as the reference reads it: a line starting with '# ' is a sentence, not a title."""
    (tmp_path / "wiki.txt").write_text("# Hashtags are popular .\nSecond .\n\n# After a blank .\nFourth .\n")
    assert corpus_sentences(str(tmp_path / "wiki.txt")) == [
        "# Hashtags are popular .", "Second .", "# After a blank .", "Fourth ."]
