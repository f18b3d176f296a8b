"""What trials and the driver share about MLflow runs, without calling MLflow: the vocabulary, and the run record.

- :mod:`~sentsweep.tracking.vocabulary`: the tags, statuses and keys users and ``sentsweep compare`` read back;
- :mod:`~sentsweep.tracking.datasets`, :mod:`~sentsweep.tracking.provenance`, :mod:`~sentsweep.tracking.placement`:
  what a run records of its data, source, metric protocols and placement. A trial builds the record and reports
  it; the driver writes it to MLflow (:mod:`sentsweep.platform.tracking`).
"""
