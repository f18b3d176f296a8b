"""The driver process of :mod:`bench.sweep_scale`, and its trivial trainable.

``python -m bench._scale_driver CONFIG.yaml RESULT.json --address HOST:PORT`` runs the platform's real sweep path
(:func:`sentsweep.platform.driver.sweep.run_sweep`: the seeded TPE searcher with constant liar, ASHA, the MLflow parent
and child runs, checkpoints and Tune's state on the sweep's storage) with :data:`TRIVIAL`, a
method with no model: a single weight, ``max_steps`` reports of a dev value computed from the trial's settings.
Its search space is the real CoSENT space (five parameters, two categorical), so the searcher does the work it does
in a CoSENT sweep. Every call of the searcher's ``suggest`` is timed (:class:`SuggestClock`); the result file gets
the sweep's outcome, the driver's peak RSS and CPU seconds, and the suggestions.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from pathlib import Path
from typing import Any

import torch
import yaml
from pydantic import Field
from torch import Tensor, nn

from bench._measure import peak_rss_mib
from sentsweep.errors import ConfigError
from sentsweep.evaluation.protocols import Embedder
from sentsweep.evaluation.sts import STSB_DEV
from sentsweep.search_spaces import SEARCH_SPACES, PythonSpace
from sentsweep.trainables.method import Method
from sentsweep.trainables.registry import trainable_spec
from sentsweep.trainables.trial_config import TrialConfig

WEIGHTS = "weight.pt"


class TrivialConfig(TrialConfig):
    """The trial settings: the shared ones plus the CoSENT space's ``scale`` and ``pooling``."""

    scale: float = Field(20.0, gt=0)
    pooling: str = "mean"


class TrivialTask:
    """One weight pulled towards 1; the dev value is a fixed function of the settings, reached as the weight is."""

    def __init__(self, config: TrivialConfig) -> None:
        self.config = config
        self.model = nn.Linear(1, 1, bias=False)
        nn.init.zeros_(self.model.weight)
        self.steps = config.max_steps or 1

    def batches(self, epoch: int, generator: torch.Generator) -> list[int]:
        return list(range(self.steps))

    def loss(self, batch: int) -> tuple[Tensor, dict[str, float]]:
        return (self.model.weight.sum() - 1.0) ** 2, {}

    def evaluate(self) -> dict[str, float]:
        c = self.config
        best = 85.0 - 4.0 * (math.log10(c.lr) + 4.5) ** 2 - ((c.scale - 20.0) / 8.0) ** 2 \
            - (0.0 if c.pooling == "mean" else 1.5) - 20.0 * c.warmup_ratio * (c.batch_size / 64)
        reached = float(self.model.weight.detach().sum().clamp(0.0, 1.0))
        return {STSB_DEV: best * (0.5 + 0.5 * reached)}

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), directory / WEIGHTS)

    def load(self, directory: Path) -> None:
        self.model.load_state_dict(torch.load(directory / WEIGHTS, weights_only=True))


class TrivialMethod(Method[TrivialConfig, TrivialTask]):
    """A method with no model: what remains of a trial is the platform's work."""

    name = "scale-trivial"
    config_cls = TrivialConfig

    def build_task(self, config: TrivialConfig) -> TrivialTask:
        return TrivialTask(config)

    def final_evaluation(self, task: TrivialTask, config: TrivialConfig) -> dict[str, float]:
        return {}

    def load_encoder(self, folder: Path, device: str | None = None, **settings: Any) -> Embedder:
        raise ConfigError("the trivial benchmark method saves no encoder", field="method")


TRIVIAL = TrivialMethod()
TRIVIAL_TRAINABLE = trainable_spec(TRIVIAL)
COSENT_SPACE = SEARCH_SPACES["cosent"]
TRIVIAL_SPACE = PythonSpace("scale-trivial", TRIVIAL.name, COSENT_SPACE.define_by_run, COSENT_SPACE.first_point,
                                "the CoSENT space on the trivial method")


class SuggestClock:
    """Times every suggestion of the sweep's searcher (``PruningAwareOptunaSearch.suggest``, wrapped in this
    process while the block runs) and notes how many trials had finished (COMPLETE or PRUNED: what TPE's start-up
    counts) and who made it: ``tpe`` (TPE's model: its ``sample_relative`` returned the parameters), ``random``
    (its start-up) or ``fixed`` (an enqueued first point: a trial the study held, waiting, before the ask)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.at_first: dict[str, float] = {}  # the driver's CPU seconds and RSS at the first suggestion
        self._original: Any = None

    def __enter__(self) -> SuggestClock:
        from optuna.trial import TrialState

        from sentsweep.platform.search.searcher import TUNE_TRIAL_ATTR, PruningAwareOptunaSearch

        original = self._original = PruningAwareOptunaSearch.suggest
        calls, at_first = self.calls, self.at_first
        made: set[int] = set()  # trials whose parameters TPE's model made
        spied: set[int] = set()  # the samplers watched

        def suggest(searcher: PruningAwareOptunaSearch, trial_id: str) -> Any:
            if not at_first:
                at_first.update(cpu_s=cpu_seconds(), rss_mib=rss_mib())
            study = searcher.study
            if id(study.sampler) not in spied:
                spied.add(id(study.sampler))
                sample = study.sampler.sample_relative

                def spy(study: Any, trial: Any, space: dict[str, Any]) -> dict[str, Any]:
                    params = sample(study, trial, space)
                    if params:
                        made.add(trial.number)
                    return params

                study.sampler.sample_relative = spy  # type: ignore[method-assign]
            held = len(study.trials)
            finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))
            begin = time.perf_counter()
            config = original(searcher, trial_id)
            seconds = time.perf_counter() - begin
            trial = next((t for t in study.get_trials(deepcopy=False) if t.user_attrs.get(TUNE_TRIAL_ATTR) == trial_id),
                         None)
            if isinstance(config, dict) and trial is not None:
                kind = "fixed" if trial.number < held else "tpe" if trial.number in made else "random"
                calls.append({"seconds": seconds, "finished": finished, "trials": len(study.trials), "kind": kind})
            return config

        PruningAwareOptunaSearch.suggest = suggest  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from sentsweep.platform.search.searcher import PruningAwareOptunaSearch

        PruningAwareOptunaSearch.suggest = self._original  # type: ignore[method-assign]


def cpu_seconds() -> float:
    """This process's CPU seconds so far (user and system)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mib() -> float:
    """This process's resident set size now, in MiB."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def bare_trial_seconds(raw: dict[str, Any], repeats: int = 5) -> float:
    """Median seconds of the trivial trial alone (no Ray, no tracking, no storage): its own compute."""
    config = {k: v for k, v in raw.items() if k != "tracking"}
    seconds = []
    for _ in range(repeats):
        begin = time.perf_counter()
        TRIVIAL.train_standalone(config, log=lambda line: None)
        seconds.append(time.perf_counter() - begin)
    return sorted(seconds)[len(seconds) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description="one sweep of bench.sweep_scale (its driver process)")
    parser.add_argument("config", type=Path)
    parser.add_argument("result", type=Path)
    parser.add_argument("--address", required=True)
    args = parser.parse_args()

    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.driver.sweep import run_sweep

    config = SweepConfig.model_validate(yaml.safe_load(args.config.read_text()))
    with SuggestClock() as clock:
        outcome = run_sweep(config, trainable=TRIVIAL_TRAINABLE, space=TRIVIAL_SPACE, address=args.address,
                            finalize=False, echo=lambda line: print(line, flush=True))
    result = {
        "wall_s": outcome.wall_seconds, "fit_started": outcome.fit_started, "counts": outcome.counts,
        "sweep_uri": outcome.sweep_dir, "experiment_id": outcome.experiment_id,
        "parent_run_id": outcome.parent_run_id, "peak_rss_mib": peak_rss_mib(),
        "cpu_s": cpu_seconds(), "at_first_suggestion": clock.at_first, "suggestions": clock.calls,
        "bare_trial_s": bare_trial_seconds({**config.fixed, "metric": config.metric, "mode": config.mode,
                                            **COSENT_SPACE.first_point}),
    }
    args.result.write_text(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
