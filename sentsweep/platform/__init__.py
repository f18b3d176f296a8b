"""The sweep platform: Ray Tune + Optuna + ASHA, with MLflow as a view of the sweep folder.

>>> from sentsweep.platform import load_sweep_config, run_sweep      # doctest: +SKIP
>>> outcome = run_sweep(load_sweep_config("configs/demo.yaml"))      # doctest: +SKIP

Sub-packages, each naming its public face in its ``__init__``: ``driver`` (run, resume and sync a sweep; the only
part that imports the others), ``search``, ``confirm``, ``folder``, ``tracking`` and ``report``. Below them lie the
modules every part reads: ``config``, ``location``, ``identity``, ``results``, ``objectives`` and ``s3``. Names are
imported lazily, so ``import sentsweep.platform`` loads neither Ray nor MLflow.
"""

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
