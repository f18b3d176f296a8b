"""The sweep platform: Ray Tune + Optuna + ASHA + MLflow (see DESIGN.md, "The path of one sweep").

>>> from sentsweep.platform import load_sweep_config, run_sweep      # doctest: +SKIP
>>> outcome = run_sweep(load_sweep_config("configs/demo.yaml"))      # doctest: +SKIP

Modules: ``config`` (the YAML), ``sweep`` (Tuner, resume), ``search`` (TPE, pruning-aware Optuna, ASHA),
``tracking`` (parent run, driver-side statuses and totals), ``trial`` (worker-side guard),
``finalize`` (best trial: evaluation, plots, export, registry), ``storage`` (sweep folders),
``compare``, ``export``, ``plots``, ``progress`` and ``commands`` (the CLI). Names are imported lazily,
so ``import sentsweep.platform`` does not start importing Ray or MLflow.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SweepConfig": "config",
    "load_sweep_config": "config",
    "run_sweep": "sweep",
    "resume_sweep": "sweep",
    "SweepOutcome": "sweep",
    "compare": "compare",
    "export_sentence_transformer": "export",
    "PLATFORM_COMMANDS": "commands",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sentsweep.platform' has no attribute '{name}'")
    return getattr(importlib.import_module(f"sentsweep.platform.{_EXPORTS[name]}"), name)
