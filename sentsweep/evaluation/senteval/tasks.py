"""SentEval's task names and groups (no torch: what records and tables of SentEval figures need)."""

from __future__ import annotations

#: The transfer tasks, in SentEval's usual reporting order; ``senteval_avg`` averages these.
TRANSFER_TASKS: tuple[str, ...] = ("mr", "cr", "subj", "mpqa", "trec", "mrpc", "sst2")
#: The supervised SICK tasks.
SICK_TASKS: tuple[str, ...] = ("sick_relatedness", "sick_entailment")
#: Every SentEval task (the default of :func:`~.runner.evaluate_senteval` and the ``senteval`` group).
SENTEVAL_TASKS: tuple[str, ...] = (*TRANSFER_TASKS, *SICK_TASKS)
#: Tasks scored by nested cross-validation (no official split).
CV_TASKS: tuple[str, ...] = ("mr", "cr", "subj", "mpqa")
