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
    "nli_dev": (("nli", "dev"),),
}
#: Tasks scored on a registry dataset of labelled pairs, the class index as the gold score (task -> dataset). ``nli``:
#: SNLI's pairs with contradiction 0 < neutral 1 < entailment 2, the order the CoSENT reference's NLI dev set is
#: scored against (``EmbeddingSimilarityEvaluator`` on the 0/1/2 labels).
LABELLED_TASKS: dict[str, str] = {"nli": "snli"}
#: The metric keys averaged into ``sts_avg7``; it is reported only when all seven are present.
AVG7_KEYS: tuple[str, ...] = (*(f"{year}_all" for year in STS_YEARS), "stsb_test", "sickr_test")
#: The dev-set metrics training selects checkpoints on (the metric key is the task name): STS-B dev, SICK-R trial, and
#: SNLI dev scored against its NLI labels (CoSENT's NLI transfer; the reference's AllNLI dev set also holds MultiNLI's
#: dev pairs, which the shared data lacks).
STSB_DEV = "stsb_dev"
SICKR_TRIAL = "sickr_trial"
NLI_DEV = "nli_dev"
#: The metric a trainable selects checkpoints on by default.
SELECTION_METRIC = STSB_DEV


def task_data_splits(task: str) -> list[tuple[str, str]]:
    """The (registry dataset, split) pairs a name of :data:`STS_TASK_SPLITS` reads: ``nli_dev`` -> SNLI's dev split
    (:data:`LABELLED_TASKS`), ``stsb_dev`` -> STS-B's, a year -> its ``all`` split."""
    return [(LABELLED_TASKS.get(name, name), split) for name, split in STS_TASK_SPLITS[task]]
