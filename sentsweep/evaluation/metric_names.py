"""The STS tasks and metric keys (see :mod:`sentsweep.evaluation.sts`), in a module that imports nothing, so that
the sweep config and the CLI name them without loading the evaluation's numerical libraries."""

from __future__ import annotations

#: The STS years scored with the "all" protocol.
STS_YEARS: tuple[str, ...] = ("sts12", "sts13", "sts14", "sts15", "sts16")
#: The seven standard STS tasks (the default of :func:`evaluate_sts`).
STS_TASKS: tuple[str, ...] = (*STS_YEARS, "stsb", "sickr")
#: Every task name :func:`evaluate_sts` accepts, mapped to the (task, split) sets it evaluates.
STS_TASK_SPLITS: dict[str, tuple[tuple[str, str], ...]] = {
    **{year: ((year, "all"),) for year in STS_YEARS},
    "stsb": (("stsb", "dev"), ("stsb", "test")),
    "stsb_dev": (("stsb", "dev"),),
    "stsb_test": (("stsb", "test"),),
    "sickr": (("sickr", "test"),),
    "sickr_test": (("sickr", "test"),),
    "sickr_trial": (("sickr", "trial"),),
}
#: The metric keys averaged into ``sts_avg7``; it is reported only when all seven are present.
AVG7_KEYS: tuple[str, ...] = (*(f"{year}_all" for year in STS_YEARS), "stsb_test", "sickr_test")
#: The dev-set metrics training selects checkpoints on (the metric key is the task name).
STSB_DEV = "stsb_dev"
SICKR_TRIAL = "sickr_trial"
#: The metric a trainable selects checkpoints on by default.
SELECTION_METRIC = STSB_DEV
