"""What a trial's reports carry for its MLflow run, which the sweep's driver writes (the trial imports no MLflow).

The first report of an attempt carries the run record (:data:`~sentsweep.tracking.vocabulary.RUN_RECORD_KEY`): the
trial's params (its typed config, defaults included), the source and placement tags (where Ray placed this
attempt), and its datasets. A report whose metrics have protocols not reported yet carries every protocol so far
(``protocols.json`` is rewritten whole). With ``tracking.system_metrics`` a report carries a sample of the machine
when one is due (:mod:`sentsweep.trainables.system_metrics`). Nothing here can fail a trial: a record that cannot be
built is left out with a warning.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import asdict
from typing import Any

from sentsweep.evaluation.metric_protocols import MetricProtocol
from sentsweep.tracking.datasets import trial_datasets
from sentsweep.tracking.names import placement_tags
from sentsweep.tracking.vocabulary import RUN_RECORD_KEY, protocol_record, source_tags
from sentsweep.trainables.system_metrics import SystemMetrics
from sentsweep.trainables.trial_config import TrialConfig, public_params

log = logging.getLogger("sentsweep.tracking")


def trial_source_name(method: str) -> str:
    """``mlflow.source.name`` of a trial's run: the trainable that ran it."""
    return f"sentsweep.trainables.{method}"


class RunRecord:
    """The additions to a trial's reports (:meth:`additions`); :meth:`off` adds nothing (standalone training)."""

    def __init__(self, start: dict[str, Any] | None, system: SystemMetrics | None = None,
                 enabled: bool = True) -> None:
        self.start = start
        self.system = system
        self.enabled = enabled
        self.protocols: dict[str, MetricProtocol] = {}

    @classmethod
    def off(cls) -> RunRecord:
        return cls(None, enabled=False)

    @classmethod
    def for_trial(cls, method: str, config: TrialConfig) -> RunRecord:
        """The record of a Tune trial of ``method``: params, source and placement tags, datasets."""
        start: dict[str, Any] = {"params": public_params(config),
                                 "tags": {**source_tags(trial_source_name(method)), **placement_tags()}}
        try:
            # as JSON text: Tune's TensorBoard logger warns at every list of records it cannot draw
            start["inputs"] = json.dumps([asdict(r) for r in trial_datasets(config)])
        except Exception as exc:  # noqa: BLE001 - the data is the trial's to complain about; tracking leaves it out
            log.warning("no dataset inputs recorded for this trial: %s", exc)
        system = SystemMetrics(config.system_metrics_interval_s) if config.system_metrics else None
        return cls(start, system)

    def additions(self, protocols: Mapping[str, MetricProtocol], reported: Collection[str]) -> dict[str, Any]:
        """What the next report adds: the record's start (once), protocols of ``reported`` keys not sent yet, and a
        system-metrics sample when due."""
        if not self.enabled:
            return {}
        record: dict[str, Any] = {}
        if self.start is not None:
            record, self.start = dict(self.start), None
        new = {k: p for k, p in protocols.items() if k in reported and k not in self.protocols}
        if new:
            self.protocols.update(new)
            record["protocols"] = protocol_record(self.protocols)
        added: dict[str, Any] = {RUN_RECORD_KEY: record} if record else {}
        if self.system is not None:
            added.update(self.system.due())
        return added

