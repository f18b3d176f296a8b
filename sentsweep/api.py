"""The Python API behind ``import sentsweep``: train, sweep, resume, evaluate, load a model.

>>> import sentsweep
>>> run = sentsweep.train(sentsweep.CosentConfig(max_steps=8, eval_every=4), output_dir="runs/quick")  # doctest: +SKIP
>>> run.metrics["stsb_test"], sentsweep.load_encoder("runs/quick").encode(["A man plays."]).shape  # doctest: +SKIP

:func:`train` runs one training in this process (no Ray); :func:`sweep` and :func:`resume` run the
platform's Ray Tune sweeps (:mod:`sentsweep.platform.driver.sweep`); :func:`load_encoder` opens any run folder of
any method; :func:`evaluate` scores a model (or a run folder) on the STS and SentEval suites.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.trainables.registry import get_method, load_encoder, method_for_config
from sentsweep.trainables.trial_config import TrialConfig

if TYPE_CHECKING:
    from sentsweep.evaluation.protocols import Embedder
    from sentsweep.evaluation.results import EvalResult
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.outcome import SweepOutcome

__all__ = ["TrainedRun", "evaluate", "load_encoder", "resume", "sweep", "train"]


@dataclass
class TrainedRun:
    """What :func:`train` produced: the final metrics of the best weights, the dev curve, the files."""

    method: str
    config: TrialConfig
    metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    best_step: int | None = None
    output_dir: Path | None = None


def train(
    config: TrialConfig | Mapping[str, Any],
    method: str | None = None,
    *,
    output_dir: str | Path | None = None,
    log: Callable[[str], None] | None = print,
) -> TrainedRun:
    """Train one model without Ray and evaluate its best weights on the config's ``test_tasks``.

    ``config``: a method's config (:class:`~sentsweep.trainables.cosent.CosentConfig`, ...), or a mapping
    of settings with ``method`` (here or as a key; YAML names such as ``lambda`` work). ``output_dir``
    gets ``best/`` (load it with :func:`load_encoder`), ``history.jsonl`` and ``final_metrics.json``.
    """
    if isinstance(config, TrialConfig):
        chosen = get_method(method) if method else method_for_config(config)
        settings: TrialConfig | dict[str, Any] = config
    else:
        settings = dict(config)
        chosen = get_method(method or str(settings.pop("method", "cosent")))
        settings.pop("method", None)
    result, final = chosen.train_standalone(settings, output_dir=output_dir, source="train()",
                                            log=log or (lambda line: None))
    return TrainedRun(chosen.name, chosen.parse(settings), final, result.state.history, result.state.best_step,
                      Path(output_dir) if output_dir is not None else None)


def sweep(config: SweepConfig | str | Path | Mapping[str, Any], **options: Any) -> SweepOutcome:
    """Run a hyperparameter sweep (Ray Tune + Optuna + MLflow) to its end and finalise its best trial.

    ``config``: a sweep YAML's path, a mapping of its settings or a
    :class:`~sentsweep.platform.config.SweepConfig`; ``options`` go to
    :func:`sentsweep.platform.driver.sweep.run_sweep` (``address``, ``finalize``, ``echo``, ...).
    """
    from sentsweep.platform.config import SweepConfig, load_sweep_config, parse_sweep_config
    from sentsweep.platform.driver.sweep import run_sweep

    source = None
    if isinstance(config, str | Path):
        source = str(config)
        config = load_sweep_config(config)
    elif not isinstance(config, SweepConfig):
        config = parse_sweep_config(dict(config))
    options.setdefault("source", source)
    return run_sweep(config, **options)


def resume(sweep_dir: str | Path, **options: Any) -> SweepOutcome:
    """Continue an interrupted sweep from its folder (:func:`sentsweep.platform.driver.sweep.resume_sweep`)."""
    from sentsweep.platform.driver.sweep import resume_sweep

    return resume_sweep(str(sweep_dir), **options)


def evaluate(
    model: Embedder | str | Path,
    tasks: str = "sts",
    *,
    data_dir: str | Path | None = None,
    device: str | None = None,
    **options: Any,
) -> EvalResult:
    """Score ``model`` on ``tasks`` (``sts``, ``senteval``, task names; see :mod:`sentsweep.evaluation`).

    ``model``: an embedder, or anything :func:`load_encoder` opens (a run folder, a model name).
    """
    from sentsweep.evaluation import evaluate as run_evaluation

    encoder = load_encoder(model, device=device) if isinstance(model, str | Path) else model
    return run_evaluation(encoder, tasks, data_dir=data_dir, **options)
