"""Run and resume a sweep: the Tuner and its callbacks, signals and graceful stops, the budget, the local Ray, the
checks before Ray starts, the confirmation stage's trials, and how the sweep's parent run ends.

The names below are imported on first use, so importing the package loads neither Ray nor MLflow.
"""

from __future__ import annotations

from sentsweep.lazy_exports import lazy_exports

#: Every public name and the module it lives in.
_WHERE: dict[str, str] = {
    "sync_sweep": "sentsweep.platform.driver.sync",
    "finalize_sweep": "sentsweep.platform.driver.finalize",
    "AUTH_MODE_ENV": "sentsweep.platform.driver.local_ray",
    "CLUSTER_MODE_ENV": "sentsweep.platform.driver.local_ray",
    "FailureLines": "sentsweep.platform.driver.failures",
    "INTERRUPTED_EXIT": "sentsweep.platform.driver.interrupt",
    "ProgressCallback": "sentsweep.platform.driver.progress",
    "StageTrials": "sentsweep.platform.driver.confirmation",
    "StopSignals": "sentsweep.platform.driver.interrupt",
    "StopWatch": "sentsweep.platform.driver.stopping",
    "SweepInterrupted": "sentsweep.platform.driver.interrupt",
    "SweepOutcome": "sentsweep.platform.outcome",
    "SweepState": "sentsweep.tracking.vocabulary",
    "TOKEN_ENV": "sentsweep.platform.driver.local_ray",
    "TOKEN_PATH_ENV": "sentsweep.platform.driver.local_ray",
    "close_interrupted_trials": "sentsweep.platform.driver.stopping",
    "end_stage_run": "sentsweep.platform.driver.confirmation_run",
    "interrupted_sweep": "sentsweep.platform.driver.autoresume",
    "loopback_only": "sentsweep.platform.driver.local_ray",
    "ray_auth": "sentsweep.platform.driver.local_ray",
    "resolve_specs": "sentsweep.platform.driver.specs",
    "resume_sweep": "sentsweep.platform.driver.sweep",
    "run_confirmation": "sentsweep.platform.driver.confirmation",
    "run_sweep": "sentsweep.platform.driver.sweep",
    "sample_data_warning": "sentsweep.platform.driver.preflight",
    "session_token": "sentsweep.platform.driver.local_ray",
    "storage_trimming": "sentsweep.platform.driver.trial_files",
    "superseded": "sentsweep.platform.stops",
    "unfinished_trials": "sentsweep.platform.driver.stopping",
    "validate_trials": "sentsweep.platform.driver.specs",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
