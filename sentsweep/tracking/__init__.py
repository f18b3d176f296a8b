"""What trials and the driver share about MLflow runs, without calling MLflow: the vocabulary, and the run record
a trial reports (datasets, provenance, placement) for the driver to write (:mod:`sentsweep.platform.tracking`).
"""
