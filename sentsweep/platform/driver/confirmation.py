"""The confirmation stage: the search's ``confirm.top_k`` best configurations trained again with ``confirm.seeds``
further seeds, a second Tune experiment in ``confirmation/`` (docs/architecture.md, "Winners that hold")."""

from __future__ import annotations

import csv
import json
import logging
import math
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray import tune
from ray.tune import ResultGrid
from ray.tune.search import BasicVariantGenerator

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stage import (
    STAGE_DIR,
    candidate_from,
    decide,
    ranked_by_rule,
    read_state,
    select_candidates,
    stage_location,
    stage_points,
    stage_seeds,
    write_state,
)
from sentsweep.platform.driver import interrupt
from sentsweep.platform.driver.callbacks import stage_callbacks
from sentsweep.platform.driver.resume import refuse_unreadable_state, snapshot_names
from sentsweep.platform.driver.specs import describe_settings
from sentsweep.platform.driver.trainable import build_tuner, tune_trainable
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.outcome import Candidate, ConfirmationOutcome
from sentsweep.platform.results import result_labels
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.reachability import store_answers
from sentsweep.platform.tracking.trial_runs import create_unique_run
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking import vocabulary as vocab
from sentsweep.tracking.names import CONFIRMATION_PREFIX

if TYPE_CHECKING:
    from sentsweep.trainables.registry import TrainableSpec

log = logging.getLogger("sentsweep.platform")


def run_confirmation(results: ResultGrid, config: SweepConfig, location: SweepLocation, sweep: SweepRun,
                     stops: interrupt.StopSignals, trainable: TrainableSpec, echo: Callable[[str], None] = print, *,
                     fresh: bool = False) -> ConfirmationOutcome | None:
    """Run (or continue) the stage; None when it is off or no trial finished. A stop signal raises
    :class:`SweepInterrupted` once Tune saved the stage's state. A ``fresh`` sweep begins the stage anew: a state (or
    a ``tuner.pkl``) found in its folder was planted."""
    if config.confirm.top_k == 0:
        return None
    state = None if fresh else read_state(location)
    resumed = state is not None
    if state is None:
        candidates, configs = select_candidates(results, config)
        if not candidates:
            return None
        seeds = stage_seeds(candidates, config.confirm.seeds)
        state = {"status": "running", "rule": config.confirm.rule, "run_id": None, "seeds": seeds,
                 "configs": configs, "candidates": [asdict(c) for c in candidates]}
        write_state(location, state)  # from here on, a resume continues the stage
    candidates = [candidate_from(c) for c in state["candidates"]]
    if state["run_id"] is None:
        state["run_id"] = _stage_run_id(sweep)
        write_state(location, state)
    stage = stage_location(location)
    run = stage_run(sweep, location, state["run_id"])
    points = stage_points(state)
    best = "the best configuration" if len(candidates) == 1 else f"the {len(candidates)} best configurations"
    fewer = f", of {config.confirm.top_k} asked: only trials that ran to their end compete" \
        if len(candidates) < config.confirm.top_k else ""
    echo(f"confirmation: {best} x {config.confirm.seeds} further seeds ({len(points)} trials{fewer}); the winner by "
         f"its {config.confirm.rule.replace('_', ' ')}")
    # Tune writes ``tuner.pkl`` as the Tuner is built and its experiment state only once the stage runs: a restore
    # without that state cannot run the stage
    if resumed and tune.Tuner.can_restore(stage.tune_path, storage_filesystem=stage.filesystem) \
            and snapshot_names(*stage.resolve()):
        refuse_unreadable_state(stage)  # else Tune would run the stage again without its points
        tuner = tune.Tuner.restore(stage.tune_path, tune_trainable(trainable, config), resume_errored=True,
                                   storage_filesystem=stage.filesystem)
    else:  # a Tune experiment over the fixed points, each trial run as the search runs it; a point replaces the
        # space's values on purpose (Tune's warning about every differing value is noise), and its keys are the space
        logging.getLogger("ray.tune.search.variant_generator").setLevel(logging.ERROR)
        generator = BasicVariantGenerator(points_to_evaluate=[dict(p) for p in points],
                                          max_concurrent=config.max_concurrent_trials or 0)
        callbacks = [TrialRunsCallback(run.trial_settings(), "the confirmation stage", config.resources.gpu,
                                       label_prefix=CONFIRMATION_PREFIX),
                     *stage_callbacks(config, len(points), CONFIRMATION_PREFIX)]
        tuner = build_tuner(trainable, config, stage, dict(points[0]), callbacks, search_alg=generator,
                            num_samples=len(points))
    if state["status"] == "done":
        stage_results = tuner.get_results()
    else:
        run.log_params({"top_k": str(config.confirm.top_k), "seeds": str(config.confirm.seeds),  # what is missing
                        "rule": config.confirm.rule, "candidates": ",".join(c.trial_id for c in candidates)})
        if resumed:
            run.reopen()
        else:  # the run scheduled as the sweep began (a failed sweep's reason, resumed by hand, removed)
            run.put({"op": "running", "run": run.run_id, "clear_reason": True})
        with stops.draining_in(*stage.resolve()):  # the stage's trials read the stop marker in its folder
            stage_results = tuner.fit()
        if stops.received:
            interrupt.close_interrupted_trials(run, interrupt.unfinished_trials(stage))
            run.close("interrupted", "stopped by " + stops.name)
            run.flush()
            raise interrupt.SweepInterrupted(location.uri, stops.name, sweep.tracking_uri)
    outcome = decide(candidates, state["configs"], stage_results, config, state["run_id"])
    state.update(status="done", candidates=[asdict(c) for c in outcome.candidates],
                 winner=outcome.winner.trial_id, chosen=outcome.chosen.trial_id)
    write_state(location, state)
    record(outcome, config, sweep, run, echo, result_labels(results))
    run.close("finished")
    run.flush()
    return outcome


def schedule_stage_run(sweep: SweepRun, config: SweepConfig) -> None:
    """Find or create the sweep's ``confirmation`` run (SCHEDULED) as the sweep begins; best effort: otherwise the
    stage creates it as it begins. A run that ended with a stopped or failed session is scheduled again."""
    if config.confirm.top_k == 0:
        return
    try:
        run = sweep.client.get_run(_stage_run_id(sweep))
        if run.info.status == "KILLED":
            sweep.client.update_run(run.info.run_id, status="SCHEDULED")
            if vocab.REASON_TAG in run.data.tags:
                sweep.client.delete_tag(run.info.run_id, vocab.REASON_TAG)
    except Exception as exc:  # noqa: BLE001 - best effort
        log.warning("the confirmation stage's run was not scheduled (%s: %s): it is created when the stage begins",
                    type(exc).__name__, exc)


def _stage_run_id(sweep: SweepRun, create: bool = True) -> str | None:
    """The sweep's ``confirmation`` run: known already, found, or (``create``) created now, SCHEDULED."""
    if sweep.stage_run_id is None:
        found = vocab.tagged_runs(sweep.client, sweep.experiment_id,
                                  {vocab.PARENT_TAG: sweep.run_id, vocab.ROLE_TAG: vocab.CONFIRMATION_ROLE})
        sweep.stage_run_id = found[0].info.run_id if found else None
    if sweep.stage_run_id is None and create:
        tags = {vocab.PARENT_TAG: sweep.run_id, vocab.ROLE_TAG: vocab.CONFIRMATION_ROLE,
                vocab.SWEEP_TAG: sweep.sweep_name}
        run = create_unique_run(sweep.client, sweep.experiment_id, tags, f"{sweep.sweep_name}-confirmation", tags)
        sweep.client.update_run(run.info.run_id, status="SCHEDULED")
        sweep.stage_run_id = run.info.run_id
    return sweep.stage_run_id


def end_stage_run(sweep: SweepRun, config: SweepConfig, location: SweepLocation, reason: str) -> None:
    """End the stage's run KILLED with ``reason`` unless it ended: the sweep ended for good without the stage. A run
    this session did not schedule (``--no-finalize``) is looked up, only when MLflow answers a probe (it stays
    SCHEDULED otherwise)."""
    if sweep.stage_run_id is None and config.confirm.top_k > 0 and store_answers(sweep.tracking_uri):
        try:
            _stage_run_id(sweep, create=False)
        except Exception as exc:  # noqa: BLE001 - best effort: it stays SCHEDULED
            log.warning("the confirmation stage's run was not looked up (%s: %s)", type(exc).__name__, exc)
    if sweep.stage_run_id is not None:
        run = stage_run(sweep, location, sweep.stage_run_id)
        run.put({"op": "status", "run": run.run_id, "status": "KILLED", "reason": reason[:5000], "if_running": True})
        run.flush()


def stage_run(sweep: SweepRun, location: SweepLocation, run_id: str) -> SweepRun:
    return SweepRun.attach(sweep.tracking_uri, sweep.experiment_id, run_id, sweep.sweep_name,
                           *stage_location(location).resolve(), runs={sweep.run_id})


def record(outcome: ConfirmationOutcome, config: SweepConfig, sweep: SweepRun, run: SweepRun,
           echo: Callable[[str], None], labels: dict[str, str]) -> None:
    """The further seeds' figures and tables on the confirmation run and the sweep's, and a line per configuration."""
    metric = config.metric
    per_rank: dict[str, float] = {}
    for c in outcome.candidates:
        iv = c.interval
        per_rank.update({f"r{c.rank}_{k}": v for k, v in asdict(iv).items()} | {f"r{c.rank}_search": c.search_value})
        named = labels.get(c.trial_id, c.trial_id) + (", " + describe_settings(c.params) if c.params else "")
        echo(f"  #{c.rank} (trial {named}): {metric} "
             f"{iv.describe()}, search run {c.search_value:.2f}{'  <- winner' if c is outcome.winner else ''}")
    run.log_metrics(_finite(per_rank))
    run.set_tags({f"sentsweep.confirm.r{c.rank}_trial": c.trial_id for c in outcome.candidates}
                 | {"sentsweep.confirm.rule": outcome.rule, "sentsweep.confirm.winner_rank": str(outcome.winner.rank),
                    "sentsweep.confirm.chosen_trial": outcome.chosen.trial_id})
    winner_figures = {f"confirmed_{metric}_{k}": v for k, v in asdict(outcome.winner.interval).items() if k != "n"}
    winner_figures["confirmed_seeds"] = float(outcome.winner.interval.n)
    further = [r for r in outcome.winner.further_runs if math.isfinite(r.value)]
    for key in sorted(set.intersection(*(set(r.metrics) for r in further)) - {metric} if further else ()):
        if values := [r.metrics[key] for r in further if math.isfinite(r.metrics[key])]:
            winner_figures[f"confirmed_{key}_mean"] = sum(values) / len(values)
    sweep.log_metrics(_finite(winner_figures))
    sweep.set_tags({vocab.SEARCH_BEST_TAG: outcome.candidates[0].trial_id,
                    vocab.CHANGED_TAG: str(outcome.changed).lower()})
    for candidate in outcome.candidates:  # each stage trial's run names the candidate it confirms
        for seed_run in candidate.further_runs:
            run.tag_trial(seed_run.trial_id, {vocab.CONFIRMS_TAG: candidate.trial_id,
                                              vocab.CONFIRM_RANK_TAG: str(candidate.rank)})
    with tempfile.TemporaryDirectory() as tmp:
        write_tables(outcome, config, Path(tmp))
        if config.plots:  # intervals.png and its CSV; a plot that fails is a warning, never a failed stage
            from sentsweep.platform.report.winner import confirmation_plot

            try:
                confirmation_plot(outcome.candidates, outcome.winner, outcome.rule, config.metric, Path(tmp))
            except Exception as exc:  # noqa: BLE001 - best effort, as the sweep's other plots
                log.warning("no confirmation plot: %s: %s", type(exc).__name__, exc)
        run.log_artifacts(tmp, STAGE_DIR)  # kept in the stage's folder, uploaded in the background
        sweep.log_artifacts(tmp, STAGE_DIR)
    order = ranking_text(outcome.candidates, outcome.rule, config.mode)
    chosen = outcome.chosen.trial_id  # the chosen seed's label among the confirmation trials (``c01``), or its id
    if not outcome.chosen.original:
        chosen = result_labels(outcome.results, CONFIRMATION_PREFIX).get(chosen, chosen)
    echo(f"confirmed winner: #{outcome.winner.rank} by its {outcome.rule.replace('_', ' ')} (order {order}; "
         + ("changed from the single-seed ranking" if outcome.changed else "the single-seed best held")
         + f"); its weights: trial {chosen}, seed {outcome.chosen.seed} "
         f"({metric} {outcome.chosen.value:.2f}, closest to the mean)")


def ranking_text(candidates: list[Candidate], rule: str, mode: str) -> str:
    """The candidates in the rule's order, each with its failed further seeds (``#2, #1 (2 failed seeds)``)."""
    def label(c: Candidate) -> str:
        return f"#{c.rank}" + (f" ({c.failed_seeds} failed seed{'s' * (c.failed_seeds > 1)})" if c.failed_seeds else "")

    return ", ".join(label(c) for c in ranked_by_rule(candidates, rule, mode))


def write_tables(outcome: ConfirmationOutcome, config: SweepConfig, folder: Path) -> None:
    """``summary.csv`` (a row per configuration, the search's value apart) and ``seeds.csv`` (a row per seed)."""
    _write_csv(folder / "summary.csv", ["rank", "trial", "params", "n", "failed", "mean", "std", "low", "high",
                                        "search_value", "winner", "chosen_trial"],
               [[c.rank, c.trial_id, json.dumps(c.params, default=str), c.interval.n, c.failed_seeds, c.interval.mean,
                 c.interval.std, c.interval.low, c.interval.high, c.search_value, int(c is outcome.winner),
                 outcome.chosen.trial_id if c is outcome.winner else ""] for c in outcome.candidates])
    keys = sorted({k for c in outcome.candidates for r in c.runs for k in r.metrics} - {config.metric})
    _write_csv(folder / "seeds.csv", ["rank", "trial", "seed", "original", config.metric, *keys],
               [[c.rank, r.trial_id, r.seed, int(r.original), r.value, *[r.metrics.get(k, "") for k in keys]]
                for c in outcome.candidates for r in c.runs])


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with path.open("w", newline="") as out:
        csv.writer(out).writerows([header, *rows])


def _finite(metrics: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}
