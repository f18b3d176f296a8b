"""Run and resume a sweep. The names below are imported on first use, so importing the package loads neither Ray nor
MLflow."""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every name another part of the code imports from this sub-package, by the module it lives in.
_WHERE: dict[str, str] = {name: module for module, names in {
    "sentsweep.platform.driver.interrupt": ("INTERRUPTED_EXIT", "SweepInterrupted"),
    "sentsweep.platform.driver.preflight": ("check_only", "sample_data_warning"),
    "sentsweep.platform.driver.ray_session": ("CLUSTER_MODE_ENV", "local_ray_settings", "ray_auth"),
    "sentsweep.platform.driver.resume": ("interrupted_sweep", "refuse_unchangeable"),
    "sentsweep.platform.driver.specs": ("resolve_specs", "space_points", "trial_param_space", "validate_trials"),
    "sentsweep.platform.driver.sweep": ("resume_sweep", "run_sweep"),
    "sentsweep.platform.driver.sync": ("sync_sweep",),
}.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
