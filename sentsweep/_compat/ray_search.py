"""Ray Tune's private names that a resume with another number of samples needs (Ray has no public way).

``Tuner.restore`` takes no ``TuneConfig``: the restored one lives in the tuner's private ``_local_tuner._tune_config``,
whose ``search_alg`` a resume replaces with a generator that takes the sweep's current ``num_samples``
(:mod:`sentsweep.platform.resume_samples`). Guarded by ``tests/test_compat_ray_search.py``.
"""

from __future__ import annotations

from typing import Any


def restored_tune_config(tuner: Any) -> Any | None:
    """The ``TuneConfig`` a restored ``ray.tune.Tuner`` runs with; None when this Ray version keeps it elsewhere."""
    return getattr(getattr(tuner, "_local_tuner", None), "_tune_config", None)
