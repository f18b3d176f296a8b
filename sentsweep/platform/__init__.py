"""The sweep platform: Ray Tune + Optuna + ASHA, with MLflow as a view of the sweep folder. Sub-packages name their
public faces in their ``__init__``; names are imported lazily, so importing the package loads neither Ray nor MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "SweepConfig": "sentsweep.platform.config",
    "SweepOutcome": "sentsweep.platform.outcome",
    "compare": "sentsweep.platform.report.compare",
    "export_sentence_transformer": "sentsweep.platform.report.export",
    "load_sweep_config": "sentsweep.platform.config",
    "resume_sweep": "sentsweep.platform.driver.sweep",
    "run_sweep": "sentsweep.platform.driver.sweep",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
