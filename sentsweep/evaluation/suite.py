"""One entry point for every benchmark: ``evaluate(embedder, ["sts", "mr"])``.

Task names may be groups, ``"sts"`` (the seven STS tasks) and ``"senteval"`` (the seven transfer tasks
and the supervised SICK-R and SICK-E),
or single tasks of either family (``"stsb"``, ``"sickr_test"``, ``"mrpc"``), in a list or as one
comma-separated string. STS tasks are scored in one pass (so ``sts_avg7`` appears when all seven ran)
and SentEval tasks in another; the results are merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sentsweep.evaluation.metric_names import NLI_DEV, SICKR_TRIAL, STSB_DEV, task_data_splits
from sentsweep.evaluation.metric_protocols import attach_protocols
from sentsweep.evaluation.protocols import Embedder, ProgressFn
from sentsweep.evaluation.results import EvalResult
from sentsweep.evaluation.senteval import SENTEVAL_TASKS, evaluate_senteval
from sentsweep.evaluation.sts import STS_TASK_SPLITS, STS_TASKS, evaluate_sts

#: Group names and the tasks they stand for.
TASK_GROUPS: dict[str, tuple[str, ...]] = {"sts": STS_TASKS, "senteval": SENTEVAL_TASKS}
#: The (registry dataset, split) each SentEval task with a test split reports its test figure on; MR, CR, SUBJ and MPQA
#: test on k-fold parts of all their data and are not listed.
SENTEVAL_TEST_SPLITS: dict[str, tuple[str, str]] = {
    "trec": ("trec", "test"),
    "mrpc": ("mrpc", "test"),
    "sst2": ("sst2", "test"),
    "sick_relatedness": ("sickr", "test"),
    "sick_entailment": ("sickr", "test"),
}


def valid_task_names() -> list[str]:
    """Every name :func:`evaluate` accepts."""
    return [*TASK_GROUPS, *STS_TASK_SPLITS, *SENTEVAL_TASKS]


def split_tasks(tasks: Sequence[str] | str) -> tuple[list[str], list[str], set[str]]:
    """Expand groups and split names into (STS tasks, SentEval tasks, SentEval tasks that may be skipped).

    A SentEval task reached only through the ``"senteval"`` group is optional (skipped with a note when
    its data is absent); one named explicitly is required. Unknown names raise ValueError listing the
    valid ones.
    """
    if isinstance(tasks, str):
        tasks = [tasks]
    names = [n.strip().lower() for t in tasks for n in t.split(",") if n.strip()]
    valid = valid_task_names()
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; valid names: {', '.join(valid)}")
    if not names:
        raise ValueError(f"no task given; valid names: {', '.join(valid)}")
    sts: list[str] = []
    senteval: list[str] = []
    explicit: set[str] = set()
    for name in names:
        expanded = TASK_GROUPS.get(name, (name,))
        if name not in TASK_GROUPS:
            explicit.add(name)
        for task in expanded:
            (sts if task in STS_TASK_SPLITS else senteval).append(task)
    senteval = list(dict.fromkeys(senteval))
    optional = {t for t in senteval if t not in explicit}
    return list(dict.fromkeys(sts)), senteval, optional


def scored_test_splits(tasks: Sequence[str] | str) -> set[tuple[str, str]]:
    """The (registry dataset, split) pairs the test figures of the suite ``tasks`` are measured on: every set an STS
    task scores except the dev sets (STS-B dev, SICK-R trial, SNLI dev), and the test split of each SentEval task that
    has one (:data:`SENTEVAL_TEST_SPLITS`). A trial that trains on one of them would report test figures measured on
    its own training pairs. Unknown names raise ValueError, as for :func:`split_tasks`."""
    sts, senteval, _ = split_tasks(tasks)
    dev = {pair for name in (STSB_DEV, SICKR_TRIAL, NLI_DEV) for pair in task_data_splits(name)}
    splits = {pair for task in sts for pair in task_data_splits(task) if pair not in dev}
    return splits | {SENTEVAL_TEST_SPLITS[task] for task in senteval if task in SENTEVAL_TEST_SPLITS}


def evaluate(
    embedder: Embedder,
    tasks: Sequence[str] | str,
    data_dir: str | Path | None = None,
    progress: ProgressFn | None = None,
    **senteval_options: Any,
) -> EvalResult:
    """Evaluate ``embedder`` on ``tasks`` (groups ``"sts"``/``"senteval"`` or task names) and merge.

    ``senteval_options`` go to :func:`~sentsweep.evaluation.senteval.evaluate_senteval`: the fields of
    :class:`~sentsweep.evaluation.senteval.SentEvalOptions` (``setting``, ``kfold``, ``inner_kfold``,
    ``seed``, ``mrpc_features``) and its other keywords. ``result.info["protocols"]`` holds each metric's
    protocol (:mod:`~sentsweep.evaluation.metric_protocols`).
    """
    sts, senteval, optional = split_tasks(tasks)
    result = EvalResult()
    if sts:
        result = result.merge(evaluate_sts(embedder, sts, data_dir, progress))
    if senteval:
        result = result.merge(
            evaluate_senteval(
                embedder, senteval, data_dir, optional=optional, progress=progress, **senteval_options
            )
        )
    return attach_protocols(result, embedder)
