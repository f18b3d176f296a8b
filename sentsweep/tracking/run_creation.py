"""Creating an MLflow run exactly once, whatever MLflow's client retries.

MLflow's client retries every request whose answer it did not get (``mlflow.utils.request_utils``: urllib3's
``Retry`` with ``allowed_methods=None``, so a POST too): a ``create_run`` that reached the server but whose answer
was lost on the way back (a gateway's 502 or 503, a proxy restarting, a read timeout under load) is sent again and
creates a second run, a *twin* with the same tags, name and start time. A twin of a trial's run is listed by
``compare`` as one more trial, stays RUNNING for ever, and splits the trial's history when a later lookup lands on it.

:func:`create_run_once` tags each create with a token of its own (:data:`CREATE_TAG`), then looks up the runs that
carry it: the first (start time, then run id, so that every process agrees) is kept and the others, made by the same
call, are deleted (MLflow's soft delete: ``mlflow gc`` removes them for good). Left: a retried create whose first
request the server commits only after the retry's answer came back (a read timeout on a server that did finish the
request later) leaves a twin the lookup does not see yet; it carries the same token, so it can be told from the run.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

#: The tag whose value is unique to one :func:`create_run_once` call (shared by its twins alone).
CREATE_TAG = "sentsweep.create_token"

log = logging.getLogger("sentsweep.tracking")


def create_run_once(client: MlflowClient, experiment_id: str, tags: dict[str, Any], run_name: str | None = None,
                    start_time: int | None = None) -> Run:
    """``client.create_run`` with ``tags`` (and :data:`CREATE_TAG`), then the twins a retry of it made deleted; the
    run kept."""
    token = uuid.uuid4().hex
    run = client.create_run(experiment_id, tags={**tags, CREATE_TAG: token}, run_name=run_name,
                            start_time=start_time)
    made = client.search_runs([experiment_id], filter_string=f"tags.`{CREATE_TAG}` = '{token}'", max_results=10)
    if len(made) <= 1:
        return run
    made.sort(key=lambda found: (found.info.start_time or 0, found.info.run_id))
    for twin in made[1:]:
        client.delete_run(twin.info.run_id)
    log.warning("MLflow's client sent a create_run again after losing its answer (%d runs made); kept run %s, "
                "deleted the twins %s", len(made), made[0].info.run_id, ", ".join(t.info.run_id for t in made[1:]))
    return made[0]
