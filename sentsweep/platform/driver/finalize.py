"""After the trials: the best trial on the full test suite, plots, the exported and registered model, then retention.
MLflow is read only when it answers a probe at once, so an outage never holds the sweep's end."""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sentsweep.errors import ConfigError
from sentsweep.evaluation.metric_protocols import result_protocols
from sentsweep.evaluation.senteval.settings import SENTEVAL_OPTION_FIELDS
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.driver.specs import describe_settings
from sentsweep.platform.folder.retention import checkpoint_folder, prune_sweep, trial_folder
from sentsweep.platform.location import folder_command
from sentsweep.platform.report.export import (
    BEST_MODEL,
    BEST_WEIGHTS,
    ST_SUBDIR,
    export_sentence_transformer,
    has_artifact,
)
from sentsweep.platform.report.plots import TrialRecord, sweep_plots, trial_records
from sentsweep.platform.report.winner import best_label, record_front, report_reference, version_about
from sentsweep.platform.results import FIGURE_SUFFIXES, rank_results, searched_keys
from sentsweep.platform.search.scheduler import scheduler_label
from sentsweep.platform.search.study_store import load_study
from sentsweep.platform.tracking.reachability import store_answers
from sentsweep.tracking import vocabulary as vocab
from sentsweep.trainables.checkpoints import BEST_DIR, BestFolder, pick_best

if TYPE_CHECKING:
    import optuna
    from mlflow.entities import Run

    from sentsweep.platform.driver.interrupt import StopSignals
    from sentsweep.platform.location import SweepLocation
    from sentsweep.platform.outcome import SweepOutcome
    from sentsweep.platform.tracking.parent_run import SweepRun

#: The parent run's metrics from the best trial's final test suite (``final_sts_avg7``, ...).
FINAL_PREFIX = "final_"
#: The parent run's artifact folder of the final test suite, and its file of figures (:func:`evaluate_best`).
FINAL_EVAL_DIR = "best_eval"
FINAL_EVAL_JSON = "final_eval.json"


def finalize_sweep(outcome: SweepOutcome, config: SweepConfig, location: SweepLocation, sweep: SweepRun,
                   stops: StopSignals, echo: Callable[[str], None] = print) -> None:
    """Evaluate, plot, export and register the sweep's best trial (fills ``outcome``); only while this driver holds
    the sweep's lock, since what follows would compete with a new holder's finalize."""
    study = load_study(location)
    searched = searched_keys(study, outcome.results or ())  # the space's, also those every trial set alike
    records = trial_records(outcome.results, config.metric, searched) if outcome.results else []
    if config.plots:
        log_plots(study, sweep, config, records, echo)
    if config.objectives and records:  # multi-objective: the Pareto front, tagged, plotted, listed
        record_front(records, config, sweep, echo)
    # the confirmed winner's seed closest to its mean, else the best trial (of those that finished, if any)
    stage = outcome.confirmation
    best = stage.chosen_result(outcome.results) if stage is not None else None
    # the run the chosen trial's run is a child of: the stage's for a confirmation seed, else the sweep's
    parent = stage.run_id if stage is not None and best is not None and not stage.chosen.original else sweep.run_id
    ranked = rank_results(outcome.results, config.metric, config.mode) if best is None and outcome.results else []
    best = ranked[0] if ranked else best
    if best is None:
        echo("no trial reported the metric: nothing to evaluate or export")
        return
    outcome.best_trial_id = str(best.metrics.get("trial_id"))
    outcome.best_value = float(best.metrics[config.metric])
    outcome.best_config = {k: v for k, v in (best.config or {}).items() if k != "tracking"}
    found = _if_answered(sweep, lambda: vocab.find_trial_run(sweep.client, sweep.experiment_id, parent,
                                                       outcome.best_trial_id))
    outcome.best_run_id = found.info.run_id if found else None
    # before the tags below; only when MLflow answered (an outage would make each call wait out its retries)
    earlier = _if_answered(sweep, lambda: sweep.client.get_run(sweep.run_id)) if outcome.best_run_id else None
    recorded = recorded_finals(sweep, earlier, outcome.best_trial_id) if config.final_tasks and earlier else None
    label = best_label(outcome)
    sweep.set_tags({vocab.BEST_TRIAL_TAG: outcome.best_trial_id, vocab.BEST_LABEL_TAG: label}
                   | ({vocab.BEST_RUN_TAG: outcome.best_run_id} if outcome.best_run_id else {}))
    best_key = f"best_{config.metric}"
    if earlier is None or earlier.data.metrics.get(best_key) != outcome.best_value:  # once per value, not per run
        sweep.log_metrics({best_key: outcome.best_value})
    echo(f"best trial {label}: {config.metric} {outcome.best_value:.2f} with "
         + describe_settings({k: outcome.best_config[k] for k in searched if k in outcome.best_config}))
    stops.refuse_if_superseded()  # the test suite, the export and the retention below are the lock holder's alone
    # a local folder with the trial's best weights (its checkpoint's or its ``best/``), downloaded when remote
    source = pick_best(checkpoint_folder(best), BestFolder(trial_folder(best).child(BEST_DIR)), config.mode)
    if source is None:
        raise FileNotFoundError(f"trial {outcome.best_trial_id} kept no best weights")
    with tempfile.TemporaryDirectory() as tmp:
        weights = source.folder.fetch(Path(tmp) / "weights")
        if config.final_tasks:
            outcome.final_metrics = recorded or evaluate_best(weights, config, sweep, outcome.best_config)
            headline = {k: v for k, v in outcome.final_metrics.items() if k.endswith(FIGURE_SUFFIXES)}
            rest = len(outcome.final_metrics) - len(headline)
            echo(f"best trial on the test suite{' (recorded by an earlier finalize)' if recorded else ''}: "
                 + ", ".join(f"{k} {v:.2f}" for k, v in (headline or outcome.final_metrics).items())
                 + (f" (and {rest} per-subset figure{'s' * (rest > 1)}: best_eval/ in MLflow)" if headline and rest
                    else ""))
        if config.export or config.register_model:
            stops.refuse_if_superseded()
            try:
                about = version_about(outcome, config, searched) if config.register_model else None
                outcome.export_dir, outcome.model_version = export_best(weights, config, location, sweep, about)
            except ConfigError as exc:  # e.g. prompt pooling: the weights go to the child run instead
                echo(export_skipped_line(exc, label))
                sweep.set_tags({"sentsweep.export_skipped": str(exc)[:500]})
            if outcome.export_dir:
                echo(f"exported the best model to {outcome.export_dir}")
            if outcome.model_version:
                echo(f"registered as '{config.register_model}' version {outcome.model_version}")
            elif config.register_model and outcome.export_dir:
                echo(f"'{config.register_model}' is registered once MLflow answers "
                     f"({folder_command('sync', location.uri, sweep.tracking_uri)})")
        if outcome.export_dir is not None:  # the best trial's run names the exported model, else gets the weights once
            exported = f"runs:/{sweep.run_id}/{BEST_MODEL}"
            sweep.tag_trial(outcome.best_trial_id, {vocab.EXPORTED_MODEL_TAG: exported}, parent)
        elif not (outcome.best_run_id and _if_answered(
                sweep, lambda: has_artifact(sweep.client, outcome.best_run_id, BEST_WEIGHTS))):
            sweep.upload_to_trial(outcome.best_trial_id, weights, BEST_WEIGHTS, parent)
    if config.reference is not None:  # the paper's figure, its setting's trial and the winner side by side
        report_reference(config, outcome, sweep, echo)
    stops.refuse_if_superseded()
    prune_stages(outcome, config, echo)


def export_skipped_line(exc: ConfigError, label: str) -> str:
    """The line a sweep prints when its winner has no sentence-transformers form (SNCSE's prompt pooling, a
    multi-view model): the reason without the weights' folder, and where the weights go instead."""
    return (f"not exported: {exc.message}; the best weights go to the MLflow run of trial {label} under "
            f"{BEST_WEIGHTS}/ instead (export: false skips the export)")


def prune_stages(outcome: SweepOutcome, config: SweepConfig, echo: Callable[[str], None] = print) -> None:
    """The sweep folder's retention for both stages; the trial whose weights finalize used keeps them."""
    keep = {outcome.best_trial_id} if outcome.best_trial_id else set()
    stages = {"search": outcome.results,
              "confirmation": outcome.confirmation.results if outcome.confirmation is not None else None}
    for stage, results in stages.items():
        if results is not None:
            prune_sweep(results, config.metric, config.mode, config.checkpoint.keep_trials, echo, keep=keep,
                        stage=stage)


def _if_answered(sweep: SweepRun, read: Callable[[], Any]) -> Any:
    if not store_answers(sweep.tracking_uri):
        return None
    try:
        return read()
    except Exception:  # noqa: BLE001 - unknown while MLflow does not answer
        return None


def recorded_finals(sweep: SweepRun, run: Run, trial_id: str) -> dict[str, float] | None:
    """The ``final_*`` metrics an earlier finalize recorded on the parent ``run`` for best trial ``trial_id`` (a full
    SentEval suite takes most of an hour on a CPU); None unless its ``final_eval.json`` (logged last) is there."""
    if run.data.tags.get(vocab.BEST_TRIAL_TAG) != trial_id or not _if_answered(
            sweep, lambda: has_artifact(sweep.client, sweep.run_id, f"{FINAL_EVAL_DIR}/{FINAL_EVAL_JSON}")):
        return None  # not recorded, or unknown while MLflow does not answer: evaluate again
    return {k.removeprefix(FINAL_PREFIX): v for k, v in run.data.metrics.items() if k.startswith(FINAL_PREFIX)} or None


def evaluate_best(weights: Path, config: SweepConfig, sweep: SweepRun,
                  trial_config: dict[str, Any]) -> dict[str, float]:
    """The best weights on ``final_tasks``: ``final_<task>`` metrics and ``best_eval/`` on the parent run.
    SentEval uses the best trial's ``senteval_*`` options (setting, kfold, ...) when it set them."""
    from sentsweep.evaluation import evaluate
    from sentsweep.trainables.registry import load_encoder

    options = {name: trial_config[key] for key, name in SENTEVAL_OPTION_FIELDS.items()
               if trial_config.get(key) is not None}
    result = evaluate(load_encoder(weights), config.final_tasks, data_dir=config.data_dir, **options)
    metrics = {k: float(v) for k, v in result.metrics.items()}
    sweep.log_metrics({f"{FINAL_PREFIX}{k}": v for k, v in metrics.items() if math.isfinite(v)})
    sweep.log_protocols(vocab.protocol_record(result_protocols(result), prefix=FINAL_PREFIX))
    with tempfile.TemporaryDirectory() as tmp:
        result.to_csv(Path(tmp) / "final_eval.csv")
        result.to_json(Path(tmp) / FINAL_EVAL_JSON)
        sweep.log_artifacts(tmp, FINAL_EVAL_DIR)
    return metrics


def export_best(weights: Path, config: SweepConfig, location: SweepLocation, sweep: SweepRun,
                about: tuple[str, dict[str, str]] | None = None) -> tuple[str | None, str | None]:
    """The best weights logged once as an MLflow sentence-transformers model, registered from that copy with
    ``about`` (a description and tags); where the sentence-transformers folder is, and the registered version."""
    import mlflow
    from sentence_transformers import SentenceTransformer

    from sentsweep.platform.tracking.parent_run import package_versions

    versions = package_versions(("sentence-transformers", "torch", "transformers"))
    with tempfile.TemporaryDirectory() as tmp:
        folder = export_sentence_transformer(weights, Path(tmp) / "st")
        model_dir = Path(tmp) / BEST_MODEL
        mlflow.sentence_transformers.save_model(SentenceTransformer(str(folder), device="cpu"), str(model_dir),
                                                pip_requirements=[f"{k}=={v}" for k, v in versions.items()])
        exported: str | None = f"runs:/{sweep.run_id}/{BEST_MODEL}/{ST_SUBDIR}"
        if location.filesystem is None and "://" not in location.uri:
            local = Path(location.uri) / BEST_MODEL
            shutil.rmtree(local, ignore_errors=True)
            shutil.copytree(model_dir / ST_SUBDIR, local)
            exported = str(local)
        # moved into the sweep folder's uploads: sent in the background, or by a resume or sync
        sweep.log_artifacts(model_dir, BEST_MODEL, move=True)
    description, tags = about or (None, None)  # registered from the logged copy (no second upload), after its upload
    return exported, (sweep.register_model(config.register_model, BEST_MODEL, description=description, tags=tags)
                      if config.register_model else None)


def log_plots(study: optuna.Study | None, sweep: SweepRun, config: SweepConfig, records: Sequence[TrialRecord],
              echo: Callable[[str], None] = print) -> None:
    """The plots of the trials' ``records`` and the sweep folder's ``study`` to ``plots/``, each PNG with its CSV."""
    if study is None and not records:
        echo("no searcher state in the sweep folder: no plots")
        return
    with tempfile.TemporaryDirectory() as tmp:
        written, skipped = sweep_plots(study, records, config.metric, tmp, scheduler_label(config), config.mode)
        if skipped:
            (Path(tmp) / "skipped.txt").write_text("".join(f"{k}: {v}\n" for k, v in skipped.items()))
        sweep.log_artifacts(tmp, "plots")
    echo(f"plots: {', '.join(p.stem for p in written if p.suffix == '.png') or 'none'}"
         + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
