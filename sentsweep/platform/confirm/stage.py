"""The confirmation stage: the search's best configurations re-run with further seeds, the winner by a rule.

A single trial's dev value carries its seed's luck (half a point on STS-B between seeds is common), so the sweep's
"best" may be the luckiest rather than the best. After the search, the ``confirm.top_k`` best finished trials'
configurations are trained again with ``confirm.seeds`` further seeds (the same seeds for every configuration:
the comparison is paired), as Ray trials in parallel: a second Tune experiment over the fixed list of
configurations (Tune's basic generator, no searcher, no early stopping) in the sweep folder's ``confirmation/``.
Each trial is an MLflow child run of the sweep's ``confirmation`` run, itself a child of the sweep's run.

Per configuration, over its further seeds (the search's own run left out: the configuration was selected on its
value, so counting it again would inflate the figures), :mod:`.stats` gives the mean, the standard
deviation and the 95% t interval; the winner is chosen by ``confirm.rule`` (``lower_bound`` by default) and the
sweep's final evaluation, export and registration use the winner's further seed closest to that mean
(:func:`sentsweep.platform.report.finalize.finalize_sweep`). Every seed's figures (dev and test) are recorded:
``confirmation/seeds.csv`` (the search's run too, ``original`` 1) and ``summary.csv`` (the search's value in
``search_value``) on the confirmation run, ``confirmed_*`` metrics (the further seeds') on the sweep's run, and the
sweep folder's :data:`STATE_FILE`.

The stage survives a resume: :data:`STATE_FILE` in the sweep folder says the search is over (a resumed sweep
reads the search's results back instead of fitting it again,
:func:`~sentsweep.platform.search.search_state.search_results`)
and holds the candidates;
the confirmation experiment is restored from its own folder, its unfinished trials continuing.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import posixpath
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.confirm.stats import (
    CHANGED_TAG,
    CONFIRM_RANK_TAG,
    CONFIRMS_TAG,
    FIGURE_SUFFIXES,
    SEARCH_BEST_TAG,
    STAGE_DIR,
    STATE_FILE,
    Candidate,
    SeedRun,
    choose_winner,
    further_seeds,
    ranked_by_rule,
)
from sentsweep.platform.driver.failures import FailureLines
from sentsweep.platform.driver.interrupt import StopSignals, SweepInterrupted
from sentsweep.platform.driver.progress import ProgressCallback
from sentsweep.platform.driver.stopping import StopWatch, close_interrupted_trials, unfinished_trials
from sentsweep.platform.driver.trial_files import storage_trimming
from sentsweep.platform.folder.location import SweepLocation
from sentsweep.platform.folder.retention import metric_value, rank_results
from sentsweep.platform.search.searcher import is_final
from sentsweep.platform.tracking.parent_run import SweepRun
from sentsweep.platform.tracking.trial_runs import create_unique_run
from sentsweep.platform.tracking.trial_runs_callback import TrialRunsCallback
from sentsweep.tracking.vocabulary import CONFIRMATION_ROLE, PARENT_TAG, ROLE_TAG, SWEEP_TAG

if TYPE_CHECKING:
    from ray.tune import Result, ResultGrid, Tuner

log = logging.getLogger("sentsweep.platform")


@dataclass
class ConfirmationOutcome:
    """What the stage decided: the candidates with all their seeds, the winner, the seed whose weights are used."""

    run_id: str
    rule: str
    candidates: list[Candidate]
    winner: Candidate
    chosen: SeedRun
    results: ResultGrid | None = None  # the confirmation trials

    @property
    def changed(self) -> bool:
        """Whether the rule chose another configuration than the search's single-seed best."""
        return self.winner.rank != 1

    def chosen_result(self, search_results: Iterable[Result] | None) -> Result | None:
        """The Tune result of the chosen seed (a search trial, or a confirmation trial)."""
        pool = search_results if self.chosen.original else self.results
        return next((r for r in pool or [] if _trial_id(r) == self.chosen.trial_id), None)

    def chosen_parent(self, sweep_run_id: str) -> str:
        """The MLflow run the chosen trial's run is a child of."""
        return sweep_run_id if self.chosen.original else self.run_id


def stage_location(location: SweepLocation) -> SweepLocation:
    """The stage's Tune experiment folder, ``<sweep folder>/confirmation``."""
    root = location.uri if location.filesystem is None else location.fs_path
    return SweepLocation(root, STAGE_DIR, location.filesystem, posixpath.join(location.uri, STAGE_DIR))


def read_state(location: SweepLocation) -> dict[str, Any] | None:
    """The stage's saved state (None before the stage began: the file is missing). A storage that does not answer
    is a :class:`~sentsweep.errors.StorageError` (never "not begun", which would fit the search again), an
    unreadable file a :class:`ConfigError` naming it."""
    return location.read_json_object(STATE_FILE, "the confirmation stage's candidates and seeds")


def write_state(location: SweepLocation, state: dict[str, Any]) -> None:
    location.write_text(STATE_FILE, json.dumps(state, indent=1, default=str))


def _trial_id(result: Result) -> str:
    return str((result.metrics or {}).get("trial_id", ""))


def figures(metrics: dict[str, Any], metric: str) -> dict[str, float]:
    """A run's recorded figures: the sweep's metric and its test suites."""
    return {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)
            and (k == metric or k.endswith(FIGURE_SUFFIXES))}


def searched_keys(configs: list[dict[str, Any]]) -> list[str]:
    """The trial settings that differ between the search's trials (what the search chose)."""
    keys = dict.fromkeys(k for c in configs for k in c if k not in ("tracking", "seed"))
    return [k for k in keys if len({repr(c.get(k)) for c in configs}) > 1]


def select_candidates(results: ResultGrid, config: SweepConfig) -> tuple[list[Candidate], dict[str, dict]]:
    """The ``top_k`` best finished trials as candidates (each with its own run as its first seed), and their trial
    configs by trial id."""
    finished = [r for r in rank_results(results, config.metric, config.mode) if is_final(r.metrics)]
    searched = searched_keys([dict(r.config or {}) for r in results])
    candidates, configs = [], {}
    for rank, result in enumerate(finished[: config.confirm.top_k], start=1):
        trial_config = {k: v for k, v in (result.config or {}).items() if k != "tracking"}
        trial_id = _trial_id(result)
        seed = int(trial_config.get("seed", config.seed))
        value = metric_value(result, config.metric)
        run = SeedRun(trial_id, seed, math.nan if value is None else value, True,
                      figures(result.metrics or {}, config.metric))
        candidates.append(Candidate(rank, trial_id, {k: trial_config.get(k) for k in searched}, [run]))
        configs[trial_id] = trial_config
    return candidates, configs


def _identity(trial_config: dict[str, Any]) -> str:
    """A configuration regardless of its seed."""
    return json.dumps({k: v for k, v in trial_config.items() if k not in ("seed", "tracking")}, sort_keys=True,
                      default=str)


def stage_points(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The confirmation trials' configs: every candidate with every further seed."""
    return [{**state["configs"][c["trial_id"]], "seed": seed}
            for c in state["candidates"] for seed in state["seeds"][c["trial_id"]]]


def _candidate_from(raw: dict[str, Any]) -> Candidate:
    return Candidate(raw["rank"], raw["trial_id"], raw["params"], [SeedRun(**r) for r in raw["runs"]])


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
    begins (:func:`stage_run_id`), and the sweep starts all the same (SRE review 20, L5)."""
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
        callbacks=[TrialRunsCallback(run.trial_settings(), "the confirmation stage", config.resources.gpu),
                   ProgressCallback(config.metric, config.mode, len(points)), FailureLines(), StopWatch(),
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
    candidates = [_candidate_from(c) for c in state["candidates"]]
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
    record(outcome, config, sweep, run, echo)
    run.close("finished")
    run.flush()
    return outcome


def decide(candidates: list[Candidate], configs: dict[str, dict[str, Any]], stage_results: ResultGrid,
           config: SweepConfig, run_id: str) -> ConfirmationOutcome:
    """Each candidate (its trial config in ``configs``) with all its seeds (a failed or unfinished seed counts NaN,
    outside the figures), the winner by the rule over the further seeds, and the winner's further seed closest to
    their mean."""
    owners: dict[str, Candidate] = {}
    for candidate in candidates:
        candidate.runs = [r for r in candidate.runs if r.original]
        owners.setdefault(_identity(configs[candidate.trial_id]), candidate)
    for result in sorted(stage_results, key=lambda r: int((r.config or {}).get("seed", 0))):
        trial_config = dict(result.config or {})
        owner = owners.get(_identity(trial_config))
        if owner is None:
            continue
        value = metric_value(result, config.metric) if is_final(result.metrics) else None
        owner.runs.append(SeedRun(_trial_id(result), int(trial_config.get("seed", 0)),
                                  math.nan if value is None else value, False,
                                  figures(result.metrics or {}, config.metric)))
    winner = choose_winner(candidates, config.confirm.rule, config.mode)
    return ConfirmationOutcome(run_id, config.confirm.rule, candidates, winner, winner.representative(),
                               stage_results)


def record(outcome: ConfirmationOutcome, config: SweepConfig, sweep: SweepRun, run: SweepRun,
           echo: Callable[[str], None] = print) -> None:
    """The figures on the confirmation run (per rank) and on the sweep's run (the winner's): the further seeds',
    the search's run apart (``r<rank>_search``); the seeds' table, a line per configuration."""
    metric = config.metric
    per_rank: dict[str, float] = {}
    for c in outcome.candidates:
        iv = c.interval
        per_rank.update({f"r{c.rank}_mean": iv.mean, f"r{c.rank}_std": iv.std, f"r{c.rank}_low": iv.low,
                         f"r{c.rank}_high": iv.high, f"r{c.rank}_n": float(iv.n),
                         f"r{c.rank}_search": c.search_value})
        echo(f"  #{c.rank} (trial {c.trial_id}{', ' + _describe(c.params) if c.params else ''}): {metric} "
             f"{iv.describe()}, search run {c.search_value:.2f}{'  <- winner' if c is outcome.winner else ''}")
    run.log_metrics(_finite(per_rank))
    run.set_tags({f"sentsweep.confirm.r{c.rank}_trial": c.trial_id for c in outcome.candidates}
                 | {"sentsweep.confirm.rule": outcome.rule, "sentsweep.confirm.winner_rank": str(outcome.winner.rank),
                    "sentsweep.confirm.chosen_trial": outcome.chosen.trial_id})
    iv = outcome.winner.interval
    winner_figures = {f"confirmed_{metric}_mean": iv.mean, f"confirmed_{metric}_std": iv.std,
                      f"confirmed_{metric}_low": iv.low, f"confirmed_{metric}_high": iv.high,
                      "confirmed_seeds": float(iv.n)}
    further = [r for r in outcome.winner.further_runs if math.isfinite(r.value)]
    for key in sorted(set.intersection(*(set(r.metrics) for r in further)) - {metric} if further else ()):
        values = [r.metrics[key] for r in further if math.isfinite(r.metrics[key])]
        if values:
            winner_figures[f"confirmed_{key}_mean"] = sum(values) / len(values)
    sweep.log_metrics(_finite(winner_figures))
    sweep.set_tags({SEARCH_BEST_TAG: outcome.candidates[0].trial_id, CHANGED_TAG: str(outcome.changed).lower()})
    _tag_stage_runs(outcome, run)
    with tempfile.TemporaryDirectory() as tmp:
        write_tables(outcome, config, Path(tmp))
        if config.plots:
            _plot_intervals(outcome, config, Path(tmp))
        run.log_artifacts(tmp, STAGE_DIR)  # kept in the stage's folder, uploaded in the background
        sweep.log_artifacts(tmp, STAGE_DIR)
    order = ", ".join(f"#{c.rank}" for c in ranked_by_rule(outcome.candidates, outcome.rule, config.mode))
    echo(f"confirmed winner: #{outcome.winner.rank} by its {outcome.rule.replace('_', ' ')} (order {order}; "
         + ("changed from the single-seed ranking" if outcome.changed else "the single-seed best held")
         + f"); its weights: trial {outcome.chosen.trial_id}, seed {outcome.chosen.seed} "
         f"({metric} {outcome.chosen.value:.2f}, closest to the mean)")


def _tag_stage_runs(outcome: ConfirmationOutcome, run: SweepRun) -> None:
    """Each confirmation trial's run tagged with the candidate it confirms (in the background)."""
    for candidate in outcome.candidates:
        for seed_run in candidate.further_runs:
            tags = {CONFIRMS_TAG: candidate.trial_id, CONFIRM_RANK_TAG: str(candidate.rank)}
            run.tag_trial(seed_run.trial_id, tags)


def write_tables(outcome: ConfirmationOutcome, config: SweepConfig, folder: Path) -> list[Path]:
    """``summary.csv`` (one row per configuration: the further seeds' figures, the search's value apart) and
    ``seeds.csv`` (one row per seed, every figure; the search's run marked ``original`` 1)."""
    summary, seeds = folder / "summary.csv", folder / "seeds.csv"
    with summary.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["rank", "trial", "params", "n", "mean", "std", "low", "high", "search_value", "winner",
                         "chosen_trial"])
        for c in outcome.candidates:
            iv = c.interval
            writer.writerow([c.rank, c.trial_id, json.dumps(c.params, default=str), iv.n, iv.mean, iv.std, iv.low,
                             iv.high, c.search_value, int(c is outcome.winner),
                             outcome.chosen.trial_id if c is outcome.winner else ""])
    keys = sorted({k for c in outcome.candidates for r in c.runs for k in r.metrics})
    with seeds.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["rank", "trial", "seed", "original", config.metric, *[k for k in keys if k != config.metric]])
        for c in outcome.candidates:
            for r in c.runs:
                writer.writerow([c.rank, r.trial_id, r.seed, int(r.original), r.value,
                                 *[r.metrics.get(k, "") for k in keys if k != config.metric]])
    return [summary, seeds]


def _plot_intervals(outcome: ConfirmationOutcome, config: SweepConfig, folder: Path) -> None:
    """``intervals.png`` (and its CSV) beside the tables; a plot that fails is a warning, never a failed stage."""
    from sentsweep.platform.report.plots import confirmation_plot

    try:
        confirmation_plot(outcome.candidates, outcome.winner, outcome.rule, config.metric, folder)
    except Exception as exc:  # noqa: BLE001 - best effort, as the sweep's other plots
        log.warning("no confirmation plot: %s: %s", type(exc).__name__, exc)


def _finite(metrics: dict[str, float]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if math.isfinite(float(v))}


def _describe(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items())
