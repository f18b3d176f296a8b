"""The method abstraction: what a training method implements once, and the run of one trial.

A method is a subclass of :class:`Method` naming its typed config class and implementing three things:

- :meth:`Method.build_task`: the :class:`~sentsweep.trainables.train_task.TrainTask` the shared loop trains
  (its model, batches, loss, dev evaluation through the config's
  :meth:`~sentsweep.trainables.trial_config.TrialConfig.dev_evaluator`, save and load);
- :meth:`Method.final_evaluation`: the best weights on the test suite;
- :meth:`Method.load_encoder`: a saved model of the method as an embedder (``saved_marker`` names the file
  that identifies its folders; see :func:`sentsweep.trainables.registry.load_encoder`).

Everything else comes from here: parsing (:meth:`Method.parse`), a standalone run
(:meth:`Method.train_standalone`), the body of the Ray Tune function trainable (:meth:`Method.train_ray`)
and the picklable Tune function itself (:class:`TuneFunction`). A trial is :func:`run_trial`: build the
task, run the shared :class:`~sentsweep.trainables.loop.TrainingLoop` (restoring from a checkpoint when
given one), then evaluate the best weights. Reporting is a plug-in: ``report(metrics, checkpoint_dir)``
(``ray.tune.report`` under Tune, :mod:`sentsweep.trainables.tune_checkpoints`; nothing standalone). A trial
imports no MLflow: its reports carry what its run needs (:class:`RunRecord`), and the sweep's driver writes the
run (:mod:`sentsweep.platform.tracking.trial_runs`). Ray is imported only inside the Ray entry points, so standalone
training never starts Ray.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import pyarrow.fs
import torch

from sentsweep.errors import ConfigError, SentsweepError
from sentsweep.evaluation.metric_protocols import collect_protocols
from sentsweep.evaluation.protocols import Embedder
from sentsweep.tracking.vocabulary import OUTPUT_DIR
from sentsweep.trainables.checkpoints import BEST_DIR, BestFolder, StoredFolder
from sentsweep.trainables.infeasible import OUT_OF_MEMORY_ERRORS, infeasible_kind, release_memory
from sentsweep.trainables.loop import TrainingLoop
from sentsweep.trainables.loop_state import LoopResult
from sentsweep.trainables.optimizer import seed_everything
from sentsweep.trainables.report_keys import DRAINING_KEY, FAILED_KEY, FAILURE_REASON_KEY, INFEASIBLE_KEY
from sentsweep.trainables.restore_note import TuneFallback
from sentsweep.trainables.run_record import RunRecord
from sentsweep.trainables.stop_flag import StopCheck, StopFlag
from sentsweep.trainables.train_task import ReportFn, TrainTask
from sentsweep.trainables.trial_config import TrialConfig, parse_config

ConfigT = TypeVar("ConfigT", bound=TrialConfig)
# A trial that failed for a reason a retry cannot fix (a SentsweepError: DataError, ConfigError,
# NonFiniteLossError) reports FAILED_KEY and FAILURE_REASON_KEY (and ``done``) and returns: Tune retries a trial that
# raises (``max_failures``) and has no per-exception setting. The platform counts it failed and tells Optuna FAIL.
#: The GPUs a trial holds, in every report: its compute is Tune's ``time_total_s`` x these (the ``compute_seconds``
#: objective and the sweep's budget, :mod:`sentsweep.platform.driver.budget`).
GPUS_KEY = "gpus"
TaskT = TypeVar("TaskT", bound=TrainTask)


class Method(ABC, Generic[ConfigT, TaskT]):
    """A training method: its config type, its task, its final evaluation and its saved-model loader."""

    #: The registry key and the ``method`` of configs and sweeps.
    name: ClassVar[str]
    #: The typed config of a trial (the one place of the method's defaults and checks).
    config_cls: ClassVar[type[TrialConfig]]
    #: The file that marks a folder saved by this method (None: a plain transformer encoder folder).
    saved_marker: ClassVar[str | None] = None
    #: Whether Tune may reuse a trial's actor for the next trial.
    reuse_actors: ClassVar[bool] = True

    @abstractmethod
    def build_task(self, config: ConfigT) -> TaskT:
        """The task the shared loop trains (data loaded, model built, dev set loaded)."""

    @abstractmethod
    def final_evaluation(self, task: TaskT, config: ConfigT) -> dict[str, float]:
        """The best weights (loaded into ``task``) on the test suite and the method's extra figures."""

    @abstractmethod
    def load_encoder(self, folder: Path, device: str | None = None, **settings: Any) -> Embedder:
        """A model this method saved in ``folder`` (a ``best/`` or checkpoint ``model/`` folder).

        ``settings`` override the saved encoder settings (``pooling``, ``max_length``, ``prompt_template``)
        where the method allows it; a method that keeps its own settings refuses them
        (:meth:`refuse_settings`)."""

    def refuse_settings(self, settings: Mapping[str, Any]) -> None:
        """Raise :class:`ConfigError` naming the first setting when any is given: this method's saved
        models keep the encoder settings they were trained with."""
        if settings:
            name = next(iter(settings))
            raise ConfigError(f"a saved {self.name} model keeps its own encoder settings; '{name}' cannot "
                              "override them", field=name)

    def resumed_config(self, config: ConfigT, checkpoints: Sequence[StoredFolder]) -> ConfigT:
        """The config a trial resumed from ``checkpoints`` (newest first) continues with: ``config`` (the default),
        or one that rebuilds the model the checkpoint was written with where a default changed since and the
        trial's config does not set the field itself."""
        return config

    def memory_fallback(self, config: ConfigT) -> ConfigT | None:
        """A config that trains the same objective in less memory, tried once when ``config`` ran out of memory
        (:mod:`sentsweep.trainables.infeasible`); None (the default): nothing cheaper, the trial is infeasible."""
        return None

    # -- what every method shares -----------------------------------------------------------------
    def parse(self, raw: ConfigT | Mapping[str, Any], source: str = "trial config") -> ConfigT:
        """``raw`` validated into the method's config (a config of the right type is taken as is)."""
        if isinstance(raw, self.config_cls):
            return raw  # type: ignore[return-value]
        if isinstance(raw, TrialConfig):
            raise TypeError(f"method '{self.name}' needs a {self.config_cls.__name__}, got {type(raw).__name__}")
        return parse_config(self.config_cls, dict(raw), source)  # type: ignore[return-value]

    def train_standalone(
        self,
        config: ConfigT | Mapping[str, Any],
        output_dir: str | Path | None = None,
        source: str = "config",
        log: Callable[[str], None] = print,
    ) -> tuple[LoopResult, dict[str, float]]:
        """One training without Ray (``sentsweep train``, :func:`sentsweep.train`); ``output_dir`` gets the
        best weights (``best/``), ``history.jsonl`` and ``final_metrics.json``."""
        output = Path(output_dir) if output_dir is not None else None
        parsed = self.parse(config, source)
        if output is not None:
            parsed = parsed.with_output_dir(output)
        return run_trial(self, parsed, report=lambda metrics, checkpoint: None, output_dir=output, log=log)

    def train_ray(self, raw: Mapping[str, Any]) -> None:
        """The body of the method's Ray Tune function trainable.

        ``output/`` in the trial's folder of the sweep gets the history, final metrics and method extras (the
        driver logs them on the trial's MLflow run); the weights stay in the checkpoints and the trial's ``best/``
        folder on the sweep's storage, and only the sweep's best trial's are logged
        (:mod:`sentsweep.trainables.tune_checkpoints`).
        """
        import ray
        from ray import tune

        from sentsweep.trainables import tune_checkpoints

        storage = tune_checkpoints.trial_folder()
        local = Path(storage.path) if storage.is_local else Path(tune.get_context().get_trial_dir())
        output_dir = local / OUTPUT_DIR
        try:
            config = self.parse(raw).with_output_dir(output_dir)
            gpus = float(ray.get_runtime_context().get_assigned_resources().get("GPU", 0.0))
            fallback = TuneFallback(storage.path)  # Tune's restore did not find the checkpoint it named
            report = fallback.reporting(tune_checkpoints.reporter())

            def attempt(config: ConfigT) -> None:
                run_trial(self, config, report=report,
                          resume_from=tune_checkpoints.restore_candidates(), output_dir=output_dir,
                          save_weights=False, gpus=gpus, work_dir=tune_checkpoints.work_dir(storage),
                          best=tune_checkpoints.best_folder(storage), stop=StopFlag.for_this_trial(),
                          record=RunRecord.for_trial(self.name, config),
                          output_store=None if storage.is_local else storage.child(OUTPUT_DIR),
                          restore_fallback=fallback.reason)

            retry_out_of_memory(self, config, attempt)
        except (SentsweepError, *OUT_OF_MEMORY_ERRORS) as exc:  # deterministic: report it and end, no Tune retry
            tune.report(failure_report(str(raw.get("metric", "")), exc))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class TuneFunction:
    """The Ray Tune function trainable of a method: ``TuneFunction(method)(config)`` trains one trial.

    Tune pickles it to every worker; it pickles as its method (an instance of a module-level class), so a
    worker that can import the method's module can run it. ``__name__`` (``train_<method>``) names the
    trials' folders.
    """

    def __init__(self, method: Method[Any, Any]) -> None:
        self.method = method
        self.__name__ = f"train_{method.name}"
        self.__qualname__ = self.__name__
        self.__doc__ = f"Ray Tune function trainable of method '{method.name}'."

    def __call__(self, config: dict[str, Any]) -> None:
        self.method.train_ray(config)

    def __reduce__(self) -> tuple[type[TuneFunction], tuple[Method[Any, Any]]]:
        return (TuneFunction, (self.method,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TuneFunction) and type(other.method) is type(self.method)

    def __hash__(self) -> int:
        return hash((TuneFunction, type(self.method)))


def failure_report(metric: str, exc: BaseException) -> dict[str, Any]:
    """The terminal report of a trial that failed deterministically (see :data:`FAILED_KEY`); ``metric``
    (NaN) is there because Tune requires the sweep's metric in every report."""
    report: dict[str, Any] = {FAILED_KEY: 1.0, FAILURE_REASON_KEY: f"{type(exc).__name__}: {exc}"[:2000],
                              "done": True}
    kind = infeasible_kind(exc)
    if kind is not None:  # the settings cannot work: the searcher learns it (sentsweep.trainables.infeasible)
        report[INFEASIBLE_KEY] = kind
    if metric:
        report[metric] = float("nan")
    return report


def retry_out_of_memory(method: Method[ConfigT, Any], config: ConfigT, attempt: Callable[[ConfigT], Any],
                        log: Callable[[str], None] = print) -> Any:
    """``attempt(config)``; when it runs out of memory, once more with the method's
    :meth:`~Method.memory_fallback` (when it has one), else the error propagates."""
    try:
        return attempt(config)
    except OUT_OF_MEMORY_ERRORS as exc:
        fallback = method.memory_fallback(config)
        if fallback is None:
            raise
        reason = type(exc).__name__
    # outside the except block: the failed attempt's frames (and their tensors) are gone
    release_memory()
    changed = {k: v for k, v in fallback.model_dump().items() if v != getattr(config, k)}
    log(f"out of memory ({reason}); trying once more with {changed}")
    return attempt(fallback)


def run_trial(
    method: Method[ConfigT, Any],
    config: ConfigT,
    *,
    report: ReportFn,
    resume_from: Path | Sequence[StoredFolder] | None = None,
    output_dir: Path | None = None,
    save_weights: bool = True,
    gpus: float | None = None,
    log: Callable[[str], None] = print,
    work_dir: Path | None = None,
    best: BestFolder | None = None,
    stop: StopCheck | None = None,
    restore_fallback: str | None = None,
    record: RunRecord | None = None,
    output_store: StoredFolder | None = None,
) -> tuple[LoopResult, dict[str, float]]:
    """Train one trial and evaluate its best weights; returns the loop result and the final metrics.

    Every report goes to ``report``, with what ``record`` adds for the trial's MLflow run (its params, tags,
    datasets and metric protocols once each, system metrics when they are due); the final metrics are reported
    once more (with the selection metric set to its best value, so schedulers and searchers see a consistent
    figure).
    ``output_dir`` (when given) receives ``history.jsonl``, ``final_metrics.json`` and, with
    ``save_weights``, the ``best/`` weights. ``gpus``: the GPUs this trial holds (Ray's assignment, which
    may be a fraction; default: 1 when the loop runs on CUDA), for ``gpu_seconds``. ``work_dir``: the
    loop's staging folder (see :class:`TrainingLoop`), removed when the trial ends; ``best``: where the loop
    keeps the best weights; ``resume_from``: a checkpoint, or several to try newest first; ``stop``: the sweep's
    stop marker (the loop drains when it is written; a draining report is not logged as metrics);
    ``restore_fallback``: why ``resume_from`` is not the checkpoint Tune named (:mod:`.restore_note`);
    ``output_store``: a copy of ``output_dir`` on the sweep's storage, where the driver finds it.
    """
    if resume_from:
        config = method.resumed_config(config, [StoredFolder.local(resume_from)] if isinstance(resume_from, Path)
                                       else list(resume_from))
    started = time.perf_counter()
    gpu_count = gpus if gpus is not None else float(_uses_cuda(config))
    record = record or RunRecord.off()
    loop: TrainingLoop | None = None

    try:
        seed_everything(config.seed)  # before the task: its heads (MLP, classifier) are initialised there
        task = method.build_task(config)

        def forward(metrics: dict[str, float], checkpoint_dir: Path | None) -> StoredFolder | None:
            reported: dict[str, Any] = {**metrics, GPUS_KEY: gpu_count}
            if not metrics.get(DRAINING_KEY):  # the seconds so far: what a pruned trial's run shows
                wall = time.perf_counter() - started
                reported.update(wall_seconds=wall, gpu_seconds=wall * gpu_count)
                reported.update(record.additions(dev_protocols, metrics))
            return report(reported, checkpoint_dir)

        loop = TrainingLoop(task, config.loop_config(), report=forward, log=log, work_dir=work_dir, best=best,
                            stop=stop)
        with collect_protocols() as dev_protocols:
            result = loop.run(resume_from=resume_from or None, fallback=restore_fallback)
        with collect_protocols() as test_protocols:
            final = method.final_evaluation(task, config)
        loop.cleanup()  # before the run is seen FINISHED: a kill after that point leaves no work folder
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
            if output_store is not None:  # before the last report: the driver uploads it when the trial ends
                pyarrow.fs.copy_files(str(output_dir), output_store.path, destination_filesystem=output_store.fs,
                                      source_filesystem=pyarrow.fs.LocalFileSystem())
        # the selection metric is the loop's best dev value: the dev evaluator's protocol, not the test suite's
        additions = record.additions({**test_protocols, **dev_protocols}, final)
        report({**final, GPUS_KEY: gpu_count, **additions}, None)
        return result, final
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
        task.save(output_dir / BEST_DIR)
    (output_dir / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in result.state.history))
    (output_dir / "final_metrics.json").write_text(json.dumps(final, indent=2, sort_keys=True) + "\n")
