"""The sweep platform: Ray Tune + Optuna + ASHA, with MLflow as a view of the sweep folder. Sub-packages name their
public faces in their ``__init__``; names are imported lazily, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.config": ("SweepConfig", "load_sweep_config"),
    "sentsweep.platform.outcome": ("SweepOutcome",),
    "sentsweep.platform.report.compare": ("compare",),
    "sentsweep.platform.report.export": ("export_sentence_transformer",),
    "sentsweep.platform.driver.sweep": ("resume_sweep", "run_sweep"),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
