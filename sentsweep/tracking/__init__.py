"""What trials and the driver share about MLflow runs: the vocabulary, and the run record a trial reports (datasets,
provenance, placement) for the driver to write (:mod:`sentsweep.platform.tracking`). Nothing here imports MLflow
when loaded, so a trial uses it without MLflow; the helpers that take an MLflow client run on the driver alone."""
