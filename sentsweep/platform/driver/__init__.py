"""Run and resume a sweep. The names below are imported on first use, so importing the package loads neither Ray nor
MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "INTERRUPTED_EXIT": "sentsweep.platform.driver.interrupt",
    "SweepInterrupted": "sentsweep.platform.driver.interrupt",
    "SweepOutcome": "sentsweep.platform.outcome",
    "check_only": "sentsweep.platform.driver.preflight",
    "finalize_sweep": "sentsweep.platform.driver.finalize",
    "interrupted_sweep": "sentsweep.platform.driver.resume",
    "ray_session": "sentsweep.platform.driver.ray_session",
    "resolve_specs": "sentsweep.platform.driver.specs",
    "resume_sweep": "sentsweep.platform.driver.sweep",
    "run_sweep": "sentsweep.platform.driver.sweep",
    "sample_data_warning": "sentsweep.platform.driver.preflight",
    "sync_sweep": "sentsweep.platform.driver.sync",
    "validate_trials": "sentsweep.platform.driver.specs",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
