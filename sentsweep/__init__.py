"""sentsweep: hyperparameter search for sentence-embedding training.

Three methods (SNCSE, CoSENT, multi-view structured contrastive learning) wrapped as Ray Tune
trainables, searched with Optuna, tracked in MLflow. The science lives in ``sentsweep.methods``,
``sentsweep.data`` and ``sentsweep.evaluation`` and never imports Ray or MLflow.

From Python (every name is imported on first use, so ``import sentsweep`` stays light)::

    import sentsweep

    run = sentsweep.train(sentsweep.CosentConfig(max_steps=100), output_dir="runs/cosent")
    encoder = sentsweep.load_encoder("runs/cosent")
    sentsweep.evaluate(encoder, "sts").metrics["sts_avg7"]
    sentsweep.sweep("configs/demo.yaml")

``METHODS`` and ``SEARCH_SPACES`` are the registries of methods and search spaces by name.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_LAZY: dict[str, str] = {
    "train": "sentsweep.api",
    "sweep": "sentsweep.api",
    "resume": "sentsweep.api",
    "evaluate": "sentsweep.api",
    "load_encoder": "sentsweep.api",
    "TrainedRun": "sentsweep.api",
    "CosentConfig": "sentsweep.trainables.cosent",
    "SncseConfig": "sentsweep.trainables.sncse",
    "MultiviewConfig": "sentsweep.trainables.multiview",
    "METHODS": "sentsweep.trainables.registry",
    "SEARCH_SPACES": "sentsweep.search_spaces",
}

__all__ = [
    "METHODS",
    "SEARCH_SPACES",
    "CosentConfig",
    "MultiviewConfig",
    "SncseConfig",
    "TrainedRun",
    "__version__",
    "evaluate",
    "load_encoder",
    "resume",
    "sweep",
    "train",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'sentsweep' has no attribute '{name}'")
    value = getattr(import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
