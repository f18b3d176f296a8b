"""What a trial records on its run beside params and metrics: source, dataset inputs, metric protocols.

Called by :func:`sentsweep.trainables.method.run_trial` with the trial's logger; everything goes through
the trial's journal (an outage loses nothing, a reattached attempt adds nothing twice). A logger that
does not track (:class:`~sentsweep.tracking.trial_logger.NullLogger`) records nothing, and nothing here
can fail a trial: a record that cannot be built is left out with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Any

from sentsweep.evaluation.metric_protocols import MetricProtocol
from sentsweep.tracking.datasets import inputs_entry, trial_datasets
from sentsweep.tracking.journal import Entry
from sentsweep.tracking.provenance import protocol_entries, source_tags
from sentsweep.tracking.trial_logger import MlflowTrialLogger, TrialLogger

log = logging.getLogger("sentsweep.tracking")


def trial_source_name(method: str) -> str:
    """``mlflow.source.name`` of a trial's run: the trainable that ran it."""
    return f"sentsweep.trainables.{method}"


def _put(logger: TrialLogger, entries: list[Entry]) -> None:
    if isinstance(logger, MlflowTrialLogger) and entries:
        logger.record(*entries)  # under the logger's lock: its system-metrics thread puts too (SRE review 20, L4)


def record_trial_start(logger: TrialLogger, config: Any, method: str) -> None:
    """The run's source tags and its training, dev and test datasets (MLflow dataset inputs)."""
    if not isinstance(logger, MlflowTrialLogger):
        return
    entries: list[Entry] = [{"op": "tags", "tags": source_tags(trial_source_name(method))}]
    try:
        records = trial_datasets(config)
    except Exception as exc:  # the data is the trial's to complain about; tracking only leaves it out
        log.warning("no dataset inputs recorded for this trial: %s", exc)
        records = []
    if records:
        entries.append(inputs_entry(records))
    _put(logger, entries)


class ProtocolLog:
    """Records metric protocols on a trial's run as soon as a logged metric has one (the dev metric at the
    first evaluation, so that a pruned trial's figures carry theirs too), each key once; ``protocols.json``
    is rewritten with all of them whenever keys are added."""

    def __init__(self, logger: TrialLogger) -> None:
        self.logger = logger
        self.recorded: dict[str, MetricProtocol] = {}

    def update(self, protocols: Mapping[str, MetricProtocol], logged: Collection[str]) -> None:
        """Record the protocols of the metrics in ``logged`` not recorded yet."""
        new = {k: p for k, p in protocols.items() if k in logged and k not in self.recorded}
        if not new:
            return
        self.recorded.update(new)
        entries = protocol_entries(new)
        entries[-1] = protocol_entries(self.recorded)[-1]  # protocols.json: every protocol so far
        _put(self.logger, entries)
