"""A toy method for the platform tests: a tiny random BERT regressed onto a few STS-B pairs.

It runs the real machinery (:class:`~sentsweep.trainables.method.Method`, ``run_trial``, the training loop,
checkpoints, the MLflow trial logger) in milliseconds per step, and can be told to fail, to produce a
NaN loss, or to sleep per step (so a test can kill a sweep mid-way). :func:`toy_config` is a small sweep of it.

Ray workers import this module as ``tests.platform.sweep_toy`` (what Tune pickles refers to it by name): the
session's ``ray_session`` (tests/conftest.py) gives them the repository root on PYTHONPATH.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

import optuna
import torch
from pydantic import ConfigDict, Field
from safetensors.torch import load_file
from torch import Tensor, nn

from sentsweep import data as datasets
from sentsweep.evaluation.metric_protocols import attach_protocols
from sentsweep.evaluation.sts import STSB_DEV, StsEvaluator
from sentsweep.methods.encoders import EncoderSettings, TransformerEncoder
from sentsweep.platform.config import SweepConfig
from sentsweep.search_spaces import PythonSpace
from sentsweep.trainables.method import Method
from sentsweep.trainables.registry import trainable_spec
from sentsweep.trainables.trial_config import TrialConfig


class ToyConfig(TrialConfig):
    """Trial settings of the toy method (``model`` must be a local tiny BERT folder)."""

    model_config = ConfigDict(allow_inf_nan=True)  # a NaN dev_penalty makes every dev figure NaN

    pooling: Literal["cls", "mean", "max", "first_last"] = "mean"
    scale: float = Field(1.0, gt=0)
    max_train_pairs: int = 64
    max_dev_pairs: int | None = Field(40, gt=0)
    fail_at_step: int | None = None
    nan_at_step: int | None = None
    sleep_s: float = 0.0
    dev_penalty: float = 0.0
    corrupt_at_step: int | None = None  # truncate the latest persisted checkpoint's state.pt, then raise
    step_log: str | None = None  # a file that gets one line per training step (to count the steps trained)
    wait_for_steps: int = 0  # before its first step: wait until step_log holds this many lines (other trials' steps)


class ToyTask:
    """Cosine similarity * scale regressed onto score / 5 with MSE; dev metric: Spearman on STS-B dev."""

    def __init__(self, config: ToyConfig) -> None:
        self.config = config
        settings = EncoderSettings(pooling=config.pooling, max_length=32)
        self.encoder = TransformerEncoder(config.model, settings, device="cpu")
        self.model = self.encoder
        rows = datasets.scored_pairs("stsb", "train", data_dir=config.data_dir)[: config.max_train_pairs]
        self.first, self.second = [p.s1 for p in rows], [p.s2 for p in rows]
        self.labels = torch.tensor([p.score / 5.0 for p in rows])
        self.dev = config.dev_evaluator(batch_size=64)
        self.calls = 0

    def batches(self, epoch: int, generator: torch.Generator) -> list[Tensor]:
        return list(torch.randperm(len(self.first), generator=generator).split(self.config.batch_size))

    def loss(self, batch: Tensor) -> tuple[Tensor, dict[str, float]]:
        self.calls += 1
        if self.config.fail_at_step == self.calls:
            raise RuntimeError(f"toy failure at step {self.calls}")
        if self.config.corrupt_at_step == self.calls:
            _truncate_latest_checkpoint()
        if self.config.sleep_s:
            time.sleep(self.config.sleep_s)
        if self.calls == 1 and self.config.wait_for_steps:
            _wait_for_lines(Path(str(self.config.step_log)), self.config.wait_for_steps)
        if self.config.step_log:
            with open(self.config.step_log, "a") as log:
                log.write("step\n")
        idx = batch.tolist()
        u = self.encoder(self.encoder.tokenize([self.first[i] for i in idx]))
        v = self.encoder(self.encoder.tokenize([self.second[i] for i in idx]))
        cos = nn.functional.cosine_similarity(u, v) * self.config.scale
        value = nn.functional.mse_loss(cos, self.labels[batch])
        if self.config.nan_at_step == self.calls:
            value = value * float("nan")
        return value, {"cos_mean": float(cos.detach().mean())}

    def evaluate(self) -> dict[str, float]:
        metrics = dict(self.dev(self.encoder).metrics)
        metrics[STSB_DEV] -= self.config.dev_penalty
        return metrics

    def save(self, directory: Path) -> None:
        self.encoder.save(directory)

    def load(self, directory: Path) -> None:
        self.encoder.model.load_state_dict(load_file(str(directory / "model.safetensors")))


def _wait_for_lines(path: Path, lines: int, timeout_s: float = 300.0) -> None:
    """Block until ``path`` holds ``lines`` lines (another trial's steps), at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= lines:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{path} did not reach {lines} lines in {timeout_s:.0f} s")


def _truncate_latest_checkpoint() -> None:
    """What a crash while writing (or a bad disk) leaves: the latest checkpoint's state.pt cut short."""
    from ray import tune

    state = Path(tune.get_checkpoint().path) / "state.pt"
    state.write_bytes(state.read_bytes()[:64])
    raise RuntimeError("toy crash after corrupting the latest checkpoint")


class ToyMethod(Method[ToyConfig, ToyTask]):
    """The toy as a method: the whole of what a method implements."""

    name = "toy"
    config_cls = ToyConfig
    saved_marker: ClassVar[str | None] = None

    def build_task(self, config: ToyConfig) -> ToyTask:
        return ToyTask(config)

    def final_evaluation(self, task: ToyTask, config: ToyConfig) -> dict[str, float]:
        """The STS test sets of ``test_tasks``, ``max_dev_pairs`` pairs of each (a seeded sample, as for dev: the
        full STS-B test set costs seconds a trial), with their protocols recorded as the real methods' are."""
        sets = StsEvaluator(config.test_tasks, config.data_dir, max_pairs=config.max_dev_pairs)
        return dict(attach_protocols(sets(task.encoder), task.encoder).metrics)

    def load_encoder(self, folder: Path, device: str | None = None) -> TransformerEncoder:
        return TransformerEncoder.load(folder, device=device)


TOY = ToyMethod()
#: The toy's Tune trainable, generated as for the registered methods.
TOY_TRAINABLE = trainable_spec(TOY)


def toy_space(trial: optuna.Trial) -> None:
    """Learning rate and the cosine scale."""
    trial.suggest_float("lr", 1e-4, 3e-3, log=True)
    trial.suggest_float("scale", 0.5, 3.0)


#: Per Optuna trial number: trial 1 raises at step 1, trial 2 has a NaN loss at step 2 (both before
#: their first dev evaluation), trials 3 and 4 are 30 points worse than trial 0, so that, run one after
#: the other, ASHA (grace 1, reduction 2) prunes both at their first evaluation.
FAULTS: dict[int, dict[str, Any]] = {
    1: {"fail_at_step": 1},
    2: {"nan_at_step": 2},
    3: {"dev_penalty": 30.0},
    4: {"dev_penalty": 30.0},
}


def faulty_space(trial: optuna.Trial) -> dict[str, Any] | None:
    """Like :func:`toy_space`, with the faults of :data:`FAULTS`; trial 0 is the clean first point."""
    toy_space(trial)
    return FAULTS.get(trial.number)


TOY_SPACE = PythonSpace("toy", "toy", toy_space, {"lr": 1e-3, "scale": 1.0})
FAULTY_SPACE = PythonSpace("toy-faulty", "toy", faulty_space, {"lr": 1e-3, "scale": 1.0})


def toy_config(tmp_path: Path, model: Path, tracking_uri: str, **overrides: Any) -> SweepConfig:
    """A small toy sweep: 4 trials of 6 steps, dev evaluation every 2 steps, ASHA, 2 concurrent."""
    raw: dict[str, Any] = {
        "name": "toy", "method": "toy", "search_space": "toy", "num_samples": 4, "max_concurrent_trials": 2,
        "scheduler": {"type": "asha", "grace_period": 1, "reduction_factor": 2},
        "fixed": {"model": str(model), "max_steps": 6, "eval_every": 2, "batch_size": 16,
                  "max_dev_pairs": 40, "test_tasks": "stsb_test", "warmup_ratio": 0.0},
        "storage_path": str(tmp_path / "ray_results"), "seed": 3, "startup_trials": 2,
        "tracking": {"uri": tracking_uri, "artifact_location": str(tmp_path / "mlartifacts"),
                     "experiment": "toy"},
        "final_tasks": "stsb_test", "max_failures": 0, "checkpoint": {"num_to_keep": 2},
        "confirm": {"top_k": 0},  # no confirmation stage unless a test asks for one
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return SweepConfig.model_validate(raw)


def interrupt_once_started(root: Path, trials: int, done: threading.Event, deadline_s: float = 240) -> None:
    """SIGINT to this process (Tune's handler: a graceful stop) once ``trials`` trials have started under ``root``,
    seen from their folders' ``params.json`` (run in a thread beside the sweep; ``done`` ends it)."""
    deadline = time.monotonic() + deadline_s
    while not done.is_set() and time.monotonic() < deadline:
        if len(list(root.glob("*/*/params.json"))) >= trials:
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.05)


def interrupted_sweep(config: SweepConfig, trials: int, deadline_s: float = 240, finalize: bool = False,
                      echo: Callable[[str], None] = lambda line: None, space: PythonSpace = TOY_SPACE) -> Path:
    """Run the toy sweep ``config`` over ``space`` (no preflight) until ``trials`` trials have started, then stop it
    as SIGINT does (:func:`interrupt_once_started`); its folder, with the state Tune saved."""
    import pytest

    from sentsweep.platform.driver.interrupt import SweepInterrupted
    from sentsweep.platform.driver.sweep import run_sweep

    root = Path(config.storage_path)
    done = threading.Event()
    watcher = threading.Thread(target=interrupt_once_started, args=(root, trials, done, deadline_s),
                               daemon=True)
    watcher.start()
    try:
        with pytest.raises(SweepInterrupted):
            run_sweep(config, trainable=TOY_TRAINABLE, space=space, finalize=finalize, preflight=False, echo=echo)
    finally:
        done.set()
        watcher.join()
    (folder,) = [p for p in root.iterdir() if p.is_dir()]
    return folder
