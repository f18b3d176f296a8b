"""The confirmation stage: the search's best configurations re-run with further seeds, the winner by a rule.

A single trial's dev value carries its seed's luck (half a point on STS-B between seeds is common), so the sweep's
"best" may be the luckiest rather than the best. After the search, the ``confirm.top_k`` best finished trials'
configurations are trained again with ``confirm.seeds`` further seeds (the same seeds for every configuration:
the comparison is paired), as Ray trials in parallel: a second Tune experiment over the fixed list of
configurations (Tune's basic generator, no searcher, no early stopping) in the sweep folder's ``confirmation/``.
Each trial is an MLflow child run of the sweep's ``confirmation`` run, itself a child of the sweep's run.

Per configuration, over its further seeds (the search's own run left out: the configuration was selected on its
value, so counting it again would inflate the figures), :mod:`~sentsweep.platform.outcome` gives the mean, the standard
deviation and the 95% t interval; the winner is chosen by ``confirm.rule`` (``lower_bound`` by default) and the
sweep's final evaluation, export and registration use the winner's further seed closest to that mean
(:func:`sentsweep.platform.driver.finalize.finalize_sweep`). Every seed's figures (dev and test) are recorded:
``confirmation/seeds.csv`` (the search's run too, ``original`` 1) and ``summary.csv`` (the search's value in
``search_value``) on the confirmation run, ``confirmed_*`` metrics (the further seeds') on the sweep's run, and the
sweep folder's :data:`~sentsweep.platform.confirm.stage.STATE_FILE`.

The stage survives a resume: :data:`~sentsweep.platform.confirm.stage.STATE_FILE` in the sweep folder says the
search is over (a resumed sweep
reads the search's results back instead of fitting it again,
:func:`~sentsweep.platform.search.search_state.search_results`)
and holds the candidates;
the confirmation experiment is restored from its own folder, its unfinished trials continuing.

This module runs the stage. Its parts: :mod:`.state` (the stage's folder and state file), :mod:`.outcome` (the
candidates and the decision), :mod:`.stage_run` (its MLflow run), :mod:`.record` (its figures and tables).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stage import (
    candidate_from,
    decide,
    further_seeds,
    read_state,
    select_candidates,
    stage_location,
    stage_points,
    write_state,
)
from sentsweep.platform.driver.confirmation_record import record, search_labels
from sentsweep.platform.driver.confirmation_run import stage_params, stage_run, stage_run_id
from sentsweep.platform.driver.failures import FailureLines
from sentsweep.platform.driver.interrupt import StopSignals, SweepInterrupted
from sentsweep.platform.driver.progress import ProgressCallback
from sentsweep.platform.driver.staged_uploads import UploadLogsBeforeRestart
from sentsweep.platform.driver.stopping import StopWatch, close_interrupted_trials, unfinished_trials
from sentsweep.platform.driver.trial_files import storage_trimming
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.outcome import ConfirmationOutcome
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking.names import CONFIRMATION_PREFIX

if TYPE_CHECKING:
    from ray.tune import ResultGrid, Tuner


@dataclass
class StageTrials:
    """How the sweep runs a trial (given by :mod:`..driver.sweep`, which this module does not import)."""

    trainable: Any  # the Tune trainable with its resources
    reuse_actors: bool
    dirname: Callable[[Any], str]


def build_stage_tuner(points: list[dict[str, Any]], config: SweepConfig, stage: SweepLocation, run: SweepRun,
                      trials: StageTrials) -> Tuner:
    """A Tune experiment over the fixed list ``points`` (no searcher, no early stopping)."""
    from ray import tune
    from ray.tune.search import BasicVariantGenerator

    # each point replaces the space's values on purpose: Tune's warning about every differing value is noise
    logging.getLogger("ray.tune.search.variant_generator").setLevel(logging.ERROR)
    generator = BasicVariantGenerator(points_to_evaluate=[dict(p) for p in points],
                                      max_concurrent=config.max_concurrent_trials or 0)
    tune_config = tune.TuneConfig(
        metric=config.metric, mode=config.mode, search_alg=generator, num_samples=len(points),
        reuse_actors=trials.reuse_actors, trial_dirname_creator=trials.dirname)
    run_config = tune.RunConfig(
        name=stage.name, storage_path=stage.storage_path, storage_filesystem=stage.filesystem,
        failure_config=tune.FailureConfig(max_failures=config.max_failures),
        checkpoint_config=tune.CheckpointConfig(num_to_keep=config.checkpoint.num_to_keep),
        callbacks=[TrialRunsCallback(run.trial_settings(), "the confirmation stage", config.resources.gpu,
                                     label_prefix=CONFIRMATION_PREFIX),
                   ProgressCallback(config.metric, config.mode, len(points), label_prefix=CONFIRMATION_PREFIX),
                   FailureLines(CONFIRMATION_PREFIX), StopWatch(), UploadLogsBeforeRestart(),
                   *storage_trimming(config)],
        verbose=0)
    # the points replace every value; Tune wants each of their keys in the space
    return tune.Tuner(trials.trainable, param_space=dict(points[0]), tune_config=tune_config, run_config=run_config)


def run_confirmation(results: ResultGrid, config: SweepConfig, location: SweepLocation, sweep: SweepRun,
                     stops: StopSignals, trials: StageTrials, echo: Callable[[str], None] = print, *,
                     fresh: bool = False) -> ConfirmationOutcome | None:
    """Run (or continue) the stage; None when it is off or no trial finished. A stop signal during it raises
    :class:`SweepInterrupted` once Tune saved the stage's state (``resume`` continues the stage). A ``fresh`` sweep
    (a new folder, not a resume) begins the stage anew whatever its folder holds: a stage state or a Tune state
    (``tuner.pkl``, unpickled by a restore) found there was planted by someone who can write the storage."""
    from ray import tune

    if config.confirm.top_k == 0:
        return None
    state = None if fresh else read_state(location)
    resumed = state is not None
    if state is None:
        candidates, configs = select_candidates(results, config)
        if not candidates:
            return None
        seeds = {c.trial_id: further_seeds(c.runs[0].seed, config.confirm.seeds) for c in candidates}
        state = {"status": "running", "rule": config.confirm.rule, "run_id": None, "seeds": seeds,
                 "configs": configs, "candidates": [asdict(c) for c in candidates]}
        write_state(location, state)  # from here on, a resume continues the stage
    candidates = [candidate_from(c) for c in state["candidates"]]
    if state["run_id"] is None:
        state["run_id"] = stage_run_id(sweep, config)
        write_state(location, state)
    stage = stage_location(location)
    run = stage_run(sweep, location, state["run_id"])
    points = stage_points(state)
    best = "the best configuration" if len(candidates) == 1 else f"the {len(candidates)} best configurations"
    fewer = f", of {config.confirm.top_k} asked: only trials that ran to their end compete" \
        if len(candidates) < config.confirm.top_k else ""
    echo(f"confirmation: {best} x {config.confirm.seeds} further seeds ({len(points)} trials{fewer}); the winner by "
         f"its {config.confirm.rule.replace('_', ' ')}")
    path = stage.uri if stage.filesystem is None else stage.fs_path
    if resumed and tune.Tuner.can_restore(path, storage_filesystem=stage.filesystem):
        tuner = tune.Tuner.restore(path, trials.trainable, resume_errored=True, storage_filesystem=stage.filesystem)
    else:
        tuner = build_stage_tuner(points, config, stage, run, trials)
    if state["status"] == "done":
        stage_results = tuner.get_results()
    else:
        run.log_params(stage_params(config, candidates))  # logs only what is missing
        if resumed:
            run.reopen()
        else:  # the run scheduled as the sweep began (a failed sweep's reason, resumed by hand, removed)
            run.writes.put({"op": "running", "run": run.run_id, "clear_reason": True})
        stage_results = tuner.fit()
        if stops.received:
            close_interrupted_trials(run, unfinished_trials(stage))
            run.close("interrupted", "stopped by " + stops.name)
            run.flush()
            raise SweepInterrupted(location.uri, stops.name, sweep.tracking_uri)
    outcome = decide(candidates, state["configs"], stage_results, config, state["run_id"])
    state.update(status="done", candidates=[asdict(c) for c in outcome.candidates],
                 winner=outcome.winner.trial_id, chosen=outcome.chosen.trial_id)
    write_state(location, state)
    record(outcome, config, sweep, run, echo, search_labels(results))
    run.close("finished")
    run.flush()
    return outcome
