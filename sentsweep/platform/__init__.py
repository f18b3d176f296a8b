"""The sweep platform: Ray Tune + Optuna + ASHA + MLflow (see DESIGN.md, "The path of one sweep").

>>> from sentsweep.platform import load_sweep_config, run_sweep      # doctest: +SKIP
>>> outcome = run_sweep(load_sweep_config("configs/demo.yaml"))      # doctest: +SKIP

Modules: ``config`` (the YAML), ``sweep`` (Tuner, resume), ``search`` (TPE, pruning-aware Optuna, ASHA),
``sweep_tracking`` (parent run, driver-side statuses and totals), ``trial`` (worker-side guard),
``outcome`` (what a sweep produced), ``finalize`` (best trial: evaluation, plots, export, registry),
``storage`` (sweep folders), ``autoresume`` (a config's interrupted sweep), ``compare``, ``export``,
``plots``, ``progress``, and ``cluster/`` (remote Ray clusters: the Jobs API). The commands are in
:mod:`sentsweep.cli`. Names are imported lazily, so ``import sentsweep.platform`` does not start importing
Ray or MLflow.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SweepConfig": "config",
    "load_sweep_config": "config",
    "run_sweep": "sweep",
    "resume_sweep": "sweep",
    "SweepOutcome": "outcome",
    "compare": "compare",
    "export_sentence_transformer": "export",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'sentsweep.platform' has no attribute '{name}'")
    return getattr(importlib.import_module(f"sentsweep.platform.{_EXPORTS[name]}"), name)
