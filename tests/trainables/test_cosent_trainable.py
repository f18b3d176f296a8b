"""The CoSENT method: the method contract on a tiny BERT, config errors, and the cross-encoder's lambda."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from sentsweep.errors import ConfigError
from sentsweep.methods.cosent import cross_encoder_cosent_loss
from sentsweep.trainables.cosent import COSENT, CosentTask
from sentsweep.trainables.registry import load_encoder
from tests.trainables.method_contract import MethodContract, TrainedRun


def _tiny(tiny_bert_dir: Path, **overrides: Any) -> dict[str, Any]:
    return {"model": str(tiny_bert_dir), "max_steps": 4, "eval_every": 2, "max_train_pairs": 48,
            "max_dev_pairs": 40, "test_tasks": "stsb_test", "batch_size": 8, "lr": 1e-3, "seed": 3, **overrides}


class TestCosentMethod(MethodContract):
    method_name = "cosent"

    def tiny_settings(self, tiny_bert_dir: Path) -> dict[str, Any]:
        return _tiny(tiny_bert_dir)

    def test_standalone_run_writes_the_best_weights(self, trained: TrainedRun) -> None:
        assert trained.result.state.step == 4 and len(trained.result.state.history) == 2
        assert set(trained.final) >= {"stsb_test", "stsb_dev", "wall_seconds", "final"}
        assert -100 <= trained.final["stsb_test"] <= 100
        assert (trained.output_dir / "best" / "model.safetensors").exists()


def test_bad_settings_name_the_field(tiny_bert_dir: Path) -> None:
    with pytest.raises(ConfigError, match="pooling"):
        COSENT.train_standalone(_tiny(tiny_bert_dir, pooling="median"))
    with pytest.raises(ConfigError, match="softmax"):
        COSENT.train_standalone(_tiny(tiny_bert_dir, loss="softmax"))
    with pytest.raises(ConfigError, match="cross-encoder"):
        COSENT.parse({"architecture": "cross", "loss": "mse"})


def test_pooling_is_refused_with_the_cross_encoder() -> None:
    """The cross-encoder scores the [CLS] state (eq. 11): a pooling set with it would do nothing."""
    with pytest.raises(ConfigError, match="does nothing with architecture 'cross'") as err:
        COSENT.parse({"architecture": "cross", "pooling": "mean"}, source="train.yaml")
    assert err.value.field == "pooling" and err.value.file == "train.yaml"
    cross = COSENT.parse({"architecture": "cross"})
    assert cross.pooling is None and COSENT.parse(cross.model_dump(by_alias=True)) == cross  # dumps parse back
    assert COSENT.parse({}).pooling == "mean"  # the bi-encoder's default is unchanged


def test_the_cross_encoder_applies_lambda_as_eq_11_writes_it(tiny_bert_dir: Path) -> None:
    """L = log(1 + sum exp(lambda (f(k,l) - f(i,j)))): ``scale`` multiplies the raw scores, so
    searching it changes the loss; unset, lambda is the config's 20, as for the bi-encoder."""
    losses = {}
    for scale in (1.0, 20.0, None):
        given = {} if scale is None else {"scale": scale}
        task = CosentTask(COSENT.parse(_tiny(tiny_bert_dir, architecture="cross", device="cpu", **given)))
        task.model.eval()  # no dropout: the same scores in both forward passes
        batch = torch.arange(8)
        with torch.no_grad():
            losses[scale], _ = task.loss(batch)
            scores = task.net([task.train.first[i] for i in range(8)], [task.train.second[i] for i in range(8)])
        expected = cross_encoder_cosent_loss(scores, task.train.labels[batch], scale=20.0 if scale is None else scale)
        torch.testing.assert_close(losses[scale], expected)
    assert not torch.isclose(losses[1.0], losses[20.0])


def test_a_saved_cross_encoder_is_refused_as_an_embedder(tiny_bert_dir: Path, tmp_path: Path) -> None:
    task = CosentTask(COSENT.parse(_tiny(tiny_bert_dir, architecture="cross", device="cpu")))
    task.save(tmp_path / "best")
    with pytest.raises(ConfigError, match="no sentence embedding"):
        load_encoder(tmp_path)


def test_the_baselines_map_sick_scores_as_the_cosent_reference_does(tiny_bert_dir: Path) -> None:
    """The MSE baseline's targets on SICK are score / 5 (1..5 -> 0.2..1.0, the reference's ``utils.get_sick``), and
    the contrastive baselines split SICK at 3.0 (``relatedness_score > 3.0``); STS-B stays / 5 and 2.5."""
    sick = torch.tensor([1.0, 3.0, 5.0])
    same = torch.ones(3, 4)  # cosine 1 for every pair: the loss is the mean of (1 - target)^2
    for data, threshold in (("sickr", 3.0), ("stsb", 2.5)):
        mse = CosentTask(COSENT.parse(_tiny(tiny_bert_dir, loss="mse", train_data=data, device="cpu"))).pair_loss
        assert mse(same, same, sick).item() == pytest.approx(((1 - sick / 5) ** 2).mean().item(), rel=1e-6)
        contrastive = COSENT.parse(_tiny(tiny_bert_dir, loss="contrastive", train_data=data, device="cpu"))
        assert CosentTask(contrastive).pair_loss.get_config_dict()["positive_threshold"] == threshold


def _kept_genres(data_dir: Path, max_train_pairs: int) -> list[str]:
    """The STS-B genres (first column of ``sts-train.csv``) of the training pairs ``max_train_pairs`` keeps."""
    from sentsweep.trainables.cosent import load_train_pairs

    lines = (data_dir / "senteval" / "STS" / "STSBenchmark" / "sts-train.csv").read_text().splitlines()
    genre = {(f[5].strip(), f[6].strip()): f[0] for f in (line.split("\t") for line in lines)}
    kept = load_train_pairs(COSENT.parse({"max_train_pairs": max_train_pairs, "data_dir": str(data_dir)}))
    assert len(kept.first) == max_train_pairs == len(kept.labels)
    return [genre[(a.strip(), b.strip())] for a, b in zip(kept.first, kept.second, strict=True)]


def test_max_train_pairs_is_a_sample_across_the_genre_sorted_file() -> None:
    """STS-B's files are sorted by genre (the bundled sample's first 100 training rows are all captions): the kept
    pairs are the seeded sample the dev side uses, across the file."""
    from sentsweep.data import SAMPLE_DIR

    assert set(_kept_genres(SAMPLE_DIR, 100)) == {"main-captions", "main-forum", "main-news"}


def test_max_train_pairs_spans_the_genres_of_the_real_stsb_train(shared_data: Path) -> None:
    """The demos' ``max_train_pairs: 400`` on the full STS-B train (its first 2000 rows are captions)."""
    assert {"main-captions", "main-forum", "main-news"} <= set(_kept_genres(shared_data, 400))


def test_training_pairs_that_give_no_batch_end_the_trial_with_the_field_named(
        tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A training set without a pair (an own file with its header only) is a clear ConfigError, which a trial reports
    as its failure, not an IndexError from tokenizing an empty batch, which Tune would retry."""
    from sentsweep.trainables import cosent

    monkeypatch.setattr(cosent.datasets, "scored_pairs", lambda *args, **kwargs: [])
    with pytest.raises(ConfigError, match="gives no batch") as err:
        COSENT.train_standalone(_tiny(tiny_bert_dir, device="cpu"), log=lambda line: None)
    assert err.value.field == "train_data"
