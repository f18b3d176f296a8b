"""The confirmation stage's MLflow run: scheduled as the sweep begins or resumes, found again by its tags, and
ended when the sweep ends without the stage."""

from __future__ import annotations

import logging

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stage import stage_location
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.outcome import Candidate
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.trial_runs import create_unique_run
from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, PARENT_TAG, ROLE_TAG, SWEEP_TAG

log = logging.getLogger("sentsweep.platform")


def _stage_tags(sweep: SweepRun) -> dict[str, str]:
    return {PARENT_TAG: sweep.run_id, ROLE_TAG: CONFIRMATION_ROLE, SWEEP_TAG: sweep.sweep_name}


def schedule_stage_run(sweep: SweepRun, config: SweepConfig) -> str | None:
    """The sweep's ``confirmation`` run, found (an earlier session of the sweep scheduled it, or an interrupted stage
    created it) or created in MLflow's SCHEDULED state, as the sweep begins or resumes (None when the stage is off).
    MLflow answers then (the sweep's run was just created or checked); when the search ends, hours later, the stage
    needs nothing from MLflow to begin: its params, status and trials' runs are written in the background, so an
    outage at that moment delays its tracking instead of failing the sweep."""
    if config.confirm.top_k == 0:
        return None
    found = find_stage_run(sweep)
    if found is not None:
        sweep.stage_run_id = found
    else:
        run = create_unique_run(sweep.client, sweep.experiment_id, _stage_tags(sweep),
                                f"{sweep.sweep_name}-confirmation", _stage_tags(sweep))
        sweep.client.update_run(run.info.run_id, status="SCHEDULED")
        sweep.stage_run_id = run.info.run_id
    return sweep.stage_run_id


def find_stage_run(sweep: SweepRun) -> str | None:
    """The id of the sweep's ``confirmation`` run, if it has one (nothing is created)."""
    query = f"tags.`{PARENT_TAG}` = '{sweep.run_id}' and tags.`{ROLE_TAG}` = '{CONFIRMATION_ROLE}'"
    found = sweep.client.search_runs([sweep.experiment_id], filter_string=query, max_results=1)
    return found[0].info.run_id if found else None


def schedule_stage_run_if_answered(sweep: SweepRun, config: SweepConfig) -> None:
    """:func:`schedule_stage_run`, best effort: when MLflow does not answer now, the stage creates its run when it
    begins (:func:`stage_run_id`), and the sweep starts all the same."""
    try:
        schedule_stage_run(sweep, config)
    except Exception as exc:  # noqa: BLE001 - best effort
        log.warning("the confirmation stage's run was not scheduled (%s: %s): it is created when the stage begins",
                    type(exc).__name__, exc)


def stage_run_id(sweep: SweepRun, config: SweepConfig) -> str:
    """The sweep's ``confirmation`` run: the one scheduled as the sweep began or resumed, else (a caller that did
    not schedule it) the one found or created now."""
    if sweep.stage_run_id is None:
        schedule_stage_run(sweep, config)
    assert sweep.stage_run_id is not None  # the stage is on: it is being run
    return sweep.stage_run_id


def stage_params(config: SweepConfig, candidates: list[Candidate]) -> dict[str, str]:
    """The stage run's params: its settings and the candidates' trial ids."""
    return {"top_k": str(config.confirm.top_k), "seeds": str(config.confirm.seeds), "rule": config.confirm.rule,
            "candidates": ",".join(c.trial_id for c in candidates)}


def end_stage_run(sweep: SweepRun, config: SweepConfig, location: SweepLocation, reason: str) -> None:
    """End the stage's run KILLED with ``reason`` unless it ended already: the sweep ended for good (it failed: a
    user's error, no trial finished; or it finished without the stage: no finished trial reported the metric, or
    ``--no-finalize``), so the stage scheduled as it began will not run, or not to its end. A run this session did
    not schedule (``--no-finalize``) is looked up, best effort."""
    if sweep.stage_run_id is None and config.confirm.top_k > 0:
        try:
            sweep.stage_run_id = find_stage_run(sweep)
        except Exception as exc:  # noqa: BLE001 - best effort: it stays SCHEDULED
            log.warning("the confirmation stage's run was not looked up (%s: %s)", type(exc).__name__, exc)
    if sweep.stage_run_id is not None:
        run = stage_run(sweep, location, sweep.stage_run_id)
        run.writes.put({"op": "status", "run": run.run_id, "status": "KILLED", "reason": reason[:5000],
                        "if_running": True})
        run.flush()


def stage_run(sweep: SweepRun, location: SweepLocation, run_id: str) -> SweepRun:
    """The stage's run ``run_id``, its writes an earlier session left in the stage's folder queued first."""
    fs, path = stage_location(location).resolve()
    return SweepRun.attach(sweep.tracking_uri, sweep.experiment_id, run_id, sweep.sweep_name, fs, path,
                           runs={sweep.run_id})
