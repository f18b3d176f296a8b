"""MLflow as a view of the sweep folder, written by the driver alone.

- :mod:`~sentsweep.tracking.vocabulary`: the tags, statuses and keys users and ``sentsweep compare`` read back
  (imports no MLflow: trials use it too);
- :mod:`~sentsweep.tracking.trial_runs`: each trial's child run from its Tune results, the high-water mark, and
  :func:`~sentsweep.tracking.trial_runs.reconcile` (``sentsweep sync``);
- :mod:`~sentsweep.tracking.run_writes`: the driver's own writes (parent and confirmation runs), in the background;
- :mod:`~sentsweep.tracking.deliverer`: the background thread and its back-off;
- :mod:`~sentsweep.tracking.reachability`: whether a tracking server's store answers now;
- :mod:`~sentsweep.tracking.datasets`, :mod:`~sentsweep.tracking.provenance`, :mod:`~sentsweep.tracking.placement`:
  what a run records of its data, source, metric protocols and placement.
"""
