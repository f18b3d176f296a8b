"""The sweep platform: Ray Tune + Optuna + ASHA, with MLflow as a view of the sweep folder.

>>> from sentsweep.platform import load_sweep_config, run_sweep      # doctest: +SKIP
>>> outcome = run_sweep(load_sweep_config("configs/demo.yaml"))      # doctest: +SKIP

One sub-package per concern, each naming its public face in its ``__init__``:

- ``driver``: run, confirm, finish, resume and sync a sweep; the only part that imports the others;
- ``search``: the searcher on Optuna's ask/tell, ASHA, the study store, warm start;
- ``confirm``: the confirmation stage's decisions (candidates, figures, the winner);
- ``folder``: the sweep folder's lock, retention and trust;
- ``tracking``: the MLflow view (the trials' runs, the parent run, reconcile);
- ``report``: export, plots, the Pareto front, compare, notifications.

Below them lie the modules every part reads: ``config`` (the typed sweep config), ``location`` and ``identity``
(where the sweep folder is, its manifest and owner), ``results`` (how a trial's Tune results read), ``objectives``
(the objectives and their Pareto front) and ``s3`` (the S3 client of a folder on ``s3://``). The Ray Jobs client is
:mod:`sentsweep.cluster`; the commands are in :mod:`sentsweep.cli`. Names are imported lazily, so
``import sentsweep.platform`` does not start importing Ray or MLflow.
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
