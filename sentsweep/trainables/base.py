"""What every trainable shares: the typed trial config, the run of one trial, Ray and MLflow hooks.

A trial is :func:`run_trial`: validate the config, build the method's :class:`TrainTask`, run the
shared :class:`~sentsweep.trainables.loop.TrainingLoop` (restoring from a checkpoint when given one),
then evaluate the best weights on the final test suite. Reporting and tracking are plug-ins:

- ``report(metrics, checkpoint_dir)``: ``ray.tune.report`` under Tune (:func:`ray_reporter`), a printer
  standalone;
- a :class:`TrialLogger`: the MLflow child run of the trial (``sentsweep.tracking.trial_logger``,
  used when the config carries a ``tracking`` section), or nothing.

Ray is imported only inside :func:`ray_reporter` and the trainables' Ray entry points, so standalone
training never starts Ray.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sentsweep.errors import ConfigError
from sentsweep.tracking import NullLogger, Status, TrackingSettings, TrialLogger, make_trial_logger
from sentsweep.trainables.loop import LoopConfig, LoopResult, ReportFn, TrainingLoop, TrainTask, seed_everything


class TrialConfig(BaseModel):
    """Settings every method shares; a method's config subclasses this and adds its own fields."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = "minilm"
    max_length: int = Field(64, ge=8)
    batch_size: int = Field(16, ge=2)
    seed: int = 42
    optimizer: Literal["adamw", "adam"] = "adamw"
    lr: float = Field(2e-5, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    lr_schedule: Literal["linear", "constant"] = "linear"
    max_grad_norm: float | None = 1.0
    epochs: float = Field(1.0, gt=0)
    max_steps: int | None = Field(None, gt=0)
    eval_every: int = Field(125, gt=0)
    metric: str = "stsb_dev"
    mode: Literal["max", "min"] = "max"
    amp: bool = True
    eval_at_start: bool = False
    device: str | None = None
    data_dir: str | None = None
    max_dev_pairs: int | None = Field(None, gt=0)
    test_tasks: str = "sts"
    tracking: TrackingSettings | None = None

    def loop_config(self) -> LoopConfig:
        fields = LoopConfig.__dataclass_fields__
        return LoopConfig(**{name: getattr(self, name) for name in fields if hasattr(self, name)})


def parse_config(cls: type[TrialConfig], raw: dict[str, Any], source: str = "trial config") -> TrialConfig:
    """Validate ``raw`` into ``cls``; the first error names the field (and the file or source)."""
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or None
        extra = f" ({len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise ConfigError(f"{err['msg']}{extra}", field=field, file=source) from None


def ray_reporter() -> ReportFn:
    """``report(metrics, checkpoint_dir)`` forwarding to ``ray.tune.report`` with a checkpoint."""
    from ray import tune

    def report(metrics: dict[str, float], checkpoint_dir: Path | None) -> None:
        checkpoint = tune.Checkpoint.from_directory(str(checkpoint_dir)) if checkpoint_dir else None
        tune.report(metrics, checkpoint=checkpoint)

    return report


def ray_checkpoint_dir() -> Path | None:
    """The directory of the checkpoint Tune restores this trial from, if any."""
    from ray import tune

    checkpoint = tune.get_checkpoint()
    if checkpoint is None:
        return None
    return Path(checkpoint.to_directory())


class FinalEvaluator(Protocol):
    def __call__(self, task: TrainTask, config: TrialConfig) -> dict[str, float]: ...


def public_params(config: TrialConfig) -> dict[str, Any]:
    """The config as loggable params, by their YAML names (``lambda``, not ``lambda_``); where the run
    is tracked and where its files go are left out (they differ per trial and are not settings)."""
    return config.model_dump(exclude={"tracking", "output_dir"}, by_alias=True)


def run_trial(
    config: TrialConfig,
    build_task: Callable[[TrialConfig], TrainTask],
    final_evaluation: FinalEvaluator,
    *,
    report: ReportFn,
    logger: TrialLogger | None = None,
    resume_from: Path | None = None,
    output_dir: Path | None = None,
    save_weights: bool = True,
    gpus: float | None = None,
    log: Callable[[str], None] = print,
) -> tuple[LoopResult, dict[str, float]]:
    """Train one trial and evaluate its best weights; returns the loop result and the final metrics.

    Every report goes to ``report`` and to ``logger``; the final metrics are reported once more (with the
    selection metric set to its best value, so schedulers and searchers see a consistent figure).
    ``output_dir`` (when given) receives ``history.jsonl``, ``final_metrics.json`` and, with
    ``save_weights``, the ``best/`` weights. ``gpus``: the GPUs this trial holds (Ray's assignment, which
    may be a fraction; default: 1 when the loop runs on CUDA), for ``gpu_seconds``.
    """
    logger = logger or NullLogger()
    started = time.perf_counter()
    gpu_count = gpus if gpus is not None else float(_uses_cuda(config))
    logger.start(public_params(config))
    loop: TrainingLoop | None = None
    try:
        seed_everything(config.seed)  # before the task: its heads (MLP, classifier) are initialised there
        task = build_task(config)

        def forward(metrics: dict[str, float], checkpoint_dir: Path | None) -> None:
            logger.log_metrics(metrics, int(metrics.get("step", 0)))
            report(metrics, checkpoint_dir)

        loop = TrainingLoop(task, config.loop_config(), report=forward, log=log)
        result = loop.run(resume_from=resume_from)
        final = final_evaluation(task, config)
        final[config.metric] = (
            result.state.best_value if result.state.best_value is not None else float("nan")
        )
        wall = time.perf_counter() - started
        final.update(
            {
                "wall_seconds": wall,
                "gpu_seconds": wall * gpu_count,
                "final": 1.0,
                "step": float(result.state.step),
            }
        )
        if output_dir is not None:
            _write_outputs(output_dir, task, result, final, save_weights)
            logger.log_artifacts(output_dir)
        logger.log_metrics(final, result.state.step)
        # Close the run before the last report: a scheduler may end the actor right after it.
        logger.finish("FINISHED", totals={"wall_seconds": wall, "gpu_seconds": wall * gpu_count})
        report(final, None)
        return result, final
    except BaseException as exc:
        wall = time.perf_counter() - started
        status: Status = "KILLED" if isinstance(exc, KeyboardInterrupt | SystemExit) else "FAILED"
        logger.finish(
            status,
            reason=f"{type(exc).__name__}: {exc}",
            totals={"wall_seconds": wall, "gpu_seconds": wall * gpu_count},
        )
        raise
    finally:
        if loop is not None:
            loop.cleanup()


def _uses_cuda(config: TrialConfig) -> bool:
    if config.device is not None:
        return config.device.startswith("cuda")
    return torch.cuda.is_available()


def _write_outputs(output_dir: Path, task: TrainTask, result: LoopResult, final: dict[str, float],
                   save_weights: bool = True) -> None:
    output_dir.mkdir(parents=True, exist_ok=True)
    if save_weights:
        task.save(output_dir / "best")
    (output_dir / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in result.state.history))
    (output_dir / "final_metrics.json").write_text(json.dumps(final, indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True)
class Method:
    """A method as the platform and the CLI see it: its config type, task builder and final evaluation."""

    name: str
    config_cls: type[TrialConfig]
    build_task: Callable[[TrialConfig], TrainTask]
    final_evaluation: FinalEvaluator

    def parse(self, raw: dict[str, Any], source: str = "trial config") -> TrialConfig:
        return parse_config(self.config_cls, raw, source)

    def with_output_dir(self, raw: dict[str, Any], output_dir: Path) -> dict[str, Any]:
        """``raw`` told where the run's outputs go (a hook for methods that write extra files there)."""
        return raw

    def train_ray(self, raw: dict[str, Any]) -> None:
        """The body of the method's Ray Tune function trainable.

        ``<trial dir>/output`` gets the history, final metrics and method extras (logged to the trial's
        MLflow run); the weights stay in the checkpoints, and only the sweep's best trial's are logged.
        """
        import ray
        from ray import tune

        output_dir = Path(tune.get_context().get_trial_dir()) / "output"
        config = self.parse(self.with_output_dir(raw, output_dir))
        gpus = float(ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0))
        run_trial(
            config,
            self.build_task,
            self.final_evaluation,
            report=ray_reporter(),
            logger=make_trial_logger(config.tracking),
            resume_from=ray_checkpoint_dir(),
            output_dir=output_dir,
            save_weights=False,
            gpus=gpus,
        )

    def train_standalone(
        self,
        raw: dict[str, Any],
        output_dir: Path | None = None,
        source: str = "config",
        log: Callable[[str], None] = print,
    ) -> tuple[LoopResult, dict[str, float]]:
        """One training without Ray (``sentsweep train``); checkpoints are written to ``output_dir``."""
        config = self.parse(self.with_output_dir(raw, output_dir) if output_dir else raw, source)
        return run_trial(
            config,
            self.build_task,
            self.final_evaluation,
            report=lambda m, c: None,
            logger=make_trial_logger(config.tracking),
            output_dir=output_dir,
            log=log,
        )
