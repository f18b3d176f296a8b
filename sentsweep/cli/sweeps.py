"""The sweep sub-commands: ``sweep``, ``resume``, ``sync``, ``compare`` and ``export``.

Each handler returns an exit status and lets :class:`~sentsweep.errors.SentsweepError` propagate (the CLI
prints it on one line). Heavy imports (Ray, MLflow, torch) happen inside the handlers. ``sweep
--resume-interrupted`` is what a Kubernetes RayJob runs (a retried job continues its sweep).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sentsweep.cli.common import (
    add_allow_change,
    add_driver,
    add_overrides,
    add_sweep_folder,
    add_tracking_declaration,
    add_trust_storage,
)
from sentsweep.platform.config_sections import DEFAULT_TRACKING_URI
from sentsweep.platform.location import folder_command

if TYPE_CHECKING:
    from sentsweep.platform.outcome import SweepOutcome


def _add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a hyperparameter sweep from a YAML config",
                       description="Run a Ray Tune + Optuna sweep (e.g. configs/demo.yaml), log it to "
                       "MLflow, then evaluate, export and register the best trial.")
    p.add_argument("config", help="sweep YAML (see configs/demo.yaml)")
    add_overrides(p, "--set num_samples=4 --set fixed.max_steps=20")
    add_driver(p)
    p.add_argument("--resume-interrupted", action="store_true",
                   help="if the newest sweep of this identity (name, config hash and owner: $SENTSWEEP_OWNER, else "
                   "the login name) did not finish, continue it instead of starting a new one (what a retried "
                   "Kubernetes RayJob runs); the config must be the sweep's own (see --allow-change)")
    add_allow_change(p)
    add_trust_storage(p)
    p.add_argument("--check", action="store_true", help="run the checks a sweep makes before Ray starts (config, "
                   "search space, data, model, storage, tracking), print the space, the first point, the trials, "
                   "the resources per trial and where runs go, and exit 0 (or 2 naming the mistake); starts "
                   "nothing and leaves nothing behind")
    p.add_argument("--warm-start", default=None, metavar="SWEEP", help="start the search from an earlier sweep's "
                   "finished trials (its folder; the same space or the overlapping parameters)")
    p.set_defaults(handler=cmd_sweep)


def _add_resume(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("resume", help="continue an interrupted sweep from its folder",
                       description="Restore a sweep (Tuner.restore, errored trials retried) and finish it.")
    add_sweep_folder(p)
    add_tracking_declaration(p)
    add_trust_storage(p)
    add_overrides(p, "--set num_samples=16 (with --allow-change num_samples)")
    add_allow_change(p)
    add_driver(p)
    p.set_defaults(handler=cmd_resume)


def _add_sync(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sync", help="make MLflow hold what a sweep folder holds (after an outage)",
                       description="Reconcile MLflow with the sweep folder: every trial's run gets the reports it "
                       "lacks and its end (search and confirmation stage), then what the driver could not write "
                       "(finalize's figures and uploads, the model registration, the runs' ends). Idempotent; exit "
                       "status 1 while MLflow does not answer.")
    add_sweep_folder(p)
    add_tracking_declaration(p)
    p.set_defaults(handler=cmd_sync)


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="sweeps and their trials side by side, from MLflow",
                       description="Tables of sweeps and trials (markdown or CSV) and comparison plots.")
    p.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI, help="default: %(default)s")
    p.add_argument("--experiment", action="append", default=[], help="MLflow experiment (repeatable; "
                   "default: all)")
    p.add_argument("--sweeps", nargs="+", default=None, metavar="SWEEP",
                   help="sweep names, name prefixes or parent run ids (default: all)")
    p.add_argument("--format", choices=("md", "csv"), default="md", help="md: Markdown tables, csv: comma-separated "
                   "(default: %(default)s)")
    p.add_argument("--out", default=None, help="write the table to this file instead of printing it")
    p.add_argument("--plots", default=None, metavar="DIR", help="also write comparison PNGs to DIR")
    p.add_argument("--mixed-protocols", action="store_true", help="show figures of one metric measured under "
                   "different evaluation protocols side by side (refused otherwise)")
    p.set_defaults(handler=cmd_compare)


def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a run's model as a sentence-transformers folder",
                       description="Write the best weights of a trial run (or a sweep's best model) as a "
                       "folder that SentenceTransformer(DEST) loads.")
    p.add_argument("run_id", help="an MLflow run id: a trial's child run or a sweep's parent run")
    p.add_argument("dest", help="destination folder")
    p.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI, help="default: %(default)s")
    p.add_argument("--overwrite", action="store_true", help="replace a destination folder that is not empty (its "
                   "files are deleted first)")
    p.set_defaults(handler=cmd_export)


def _quiet_libraries() -> None:
    """Optuna's INFO lines ("A new study created in memory/RDB ..."), transformers' progress bars ("Loading weights",
    "Writing model shards", as the best model is evaluated and exported) and Ray Tune's header boxes ("Configuration
    for experiment", the TensorBoard hint: its new output engine prints them at ``verbose=0`` too; the legacy engine,
    which Ray keeps behind ``RAY_AIR_NEW_OUTPUT=0``, prints nothing there) and MLflow's "View run" line at each run's
    end interleaved with the sweep's progress lines, and its "Creating initial MLflow database tables" on a new sqlite
    store, say nothing a user acts on: warnings only. The sweep prints its
    own run page. Tune's traceback of a failed trial is in the trial's ``error.txt``, and the sweep prints its last
    line (``TUNE_PRINT_ALL_TRIAL_ERRORS=0``). A variable the user set is kept."""
    import optuna
    from transformers.utils import logging as transformers_logging

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)  # "Creating initial MLflow database tables"
    transformers_logging.disable_progress_bar()
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")


def cmd_sweep(args: argparse.Namespace) -> int:
    from sentsweep.platform.config import parse_sweep_config
    from sentsweep.platform.driver.sweep import resume_sweep, run_sweep
    from sentsweep.yaml_io import apply_overrides, read_yaml

    raw = apply_overrides(read_yaml(args.config), args.overrides)
    if args.warm_start:
        raw["warm_start"] = args.warm_start
    config = parse_sweep_config(raw, args.config)
    _quiet_libraries()
    if args.check:
        from sentsweep.platform.driver.preflight import check_only

        check_only(config, args.config)
        return 0
    if args.resume_interrupted:
        from sentsweep.credentials import explain_refused_credentials
        from sentsweep.platform.driver.resume import interrupted_sweep, refuse_unchangeable

        refuse_unchangeable(args.allow_change, args.config)  # also when nothing is resumed: a mistake either way
        with explain_refused_credentials(config.tracking.uri):
            folder = interrupted_sweep(config.resolved(source=args.config))
        if folder is not None:  # the sweep says it continues the folder once it holds its lock, not before
            outcome = resume_sweep(folder, endpoint_url=config.storage_endpoint_url, config=config,
                                   allow_change=args.allow_change, address=args.address, finalize=args.finalize,
                                   log_to_driver=args.verbose, forward_credentials=args.forward_credentials,
                                   trust_storage=args.trust_storage, found_interrupted=True)
            return _finish(outcome)
    outcome = run_sweep(config, source=args.config, address=args.address, finalize=args.finalize,
                        log_to_driver=args.verbose, forward_credentials=args.forward_credentials)
    return _finish(outcome)


def cmd_resume(args: argparse.Namespace) -> int:
    from sentsweep.platform.driver.sweep import resume_sweep

    _quiet_libraries()
    outcome = resume_sweep(args.sweep_dir, endpoint_url=args.storage_endpoint_url, overrides=args.overrides,
                           allow_change=args.allow_change, address=args.address, finalize=args.finalize,
                           log_to_driver=args.verbose, forward_credentials=args.forward_credentials,
                           tracking_uri=args.tracking_uri, trust_storage=args.trust_storage)
    return _finish(outcome)


def cmd_sync(args: argparse.Namespace) -> int:
    from sentsweep.platform.driver.sync import sync_sweep

    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")  # no "View run" line per run it ends
    done = sync_sweep(args.sweep_dir, args.storage_endpoint_url, tracking_uri=args.tracking_uri)
    if done.waiting:
        print(f"MLflow ({done.uri}) does not answer; run this again once it does")
        return 1
    print(f"MLflow ({done.uri}) holds the sweep folder: {done.trials.trials} trials, {done.trials.reports} reports "
          f"and {done.writes} other writes delivered now, {done.trials.ended} runs ended")
    return 0


def _finish(outcome: SweepOutcome) -> int:
    """The summary of a sweep that ran to its end; status 1 when no trial finished."""
    from sentsweep.platform.tracking.reachability import store_answers

    try:
        if not store_answers(outcome.tracking_uri):  # asked once: a summary must not wait out MLflow's retries
            raise ConnectionError("its store does not answer")
        _print_summary(outcome.tracking_uri, [outcome.parent_run_id])
    except Exception as exc:  # noqa: BLE001 - an outage: the sweep folder holds what waits, the sweep is done
        print(f"\nno summary: MLflow did not answer ({type(exc).__name__}); once it does, "
              f"`{folder_command('sync', outcome.sweep_dir, outcome.tracking_uri)}` delivers what waits")
    print(f"\nresume after an interruption: {folder_command('resume', outcome.sweep_dir, outcome.tracking_uri)}")
    return 0 if outcome.counts.get("finished", 0) else 1


def _print_summary(tracking_uri: str, sweeps: list[str]) -> None:
    from mlflow import MlflowClient

    from sentsweep.platform.report.compare import compare, render
    from sentsweep.tracking.names import ui_link

    client = MlflowClient(tracking_uri=tracking_uri)
    sweep_table, trial_table = compare(client, sweeps=sweeps)
    print("\n" + render(sweep_table, trial_table))
    link = ui_link(tracking_uri, client.get_run(sweeps[0]).info.experiment_id) if sweeps else ""
    if tracking_uri.startswith(("http://", "https://")):
        print(f"browse the runs: {link}")
    else:
        print(f"browse the runs: mlflow ui --backend-store-uri {tracking_uri}  (then open http://127.0.0.1:5000{link})")


def cmd_compare(args: argparse.Namespace) -> int:
    from sentsweep.credentials import explain_refused_credentials
    from sentsweep.platform.config import resolve_tracking_uri
    from sentsweep.platform.report.compare import compare, compare_plots, render, sweep_runs
    from sentsweep.platform.report.protocols import protocol_table, render_protocols
    from sentsweep.platform.tracking.store import open_client

    uri = resolve_tracking_uri(args.tracking_uri)
    client = open_client(uri)
    with explain_refused_credentials(uri):  # a 401/403: one line naming the variables to set
        found = sweep_runs(client, args.experiment, args.sweeps)
        protocols = protocol_table(found, mixed_protocols=args.mixed_protocols)
        sweep_table, trial_table = compare(client, found=found)
    text = render(sweep_table, trial_table, args.format)
    if args.format == "md":
        text += "\n" + render_protocols(protocols)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out} ({len(sweep_table)} sweeps, {len(trial_table)} trials)")
    else:
        print(text)
    if args.plots:
        with explain_refused_credentials(uri):
            paths = compare_plots(client, found, args.plots)
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from sentsweep.platform.config import resolve_tracking_uri
    from sentsweep.platform.report.export import export_run
    from sentsweep.platform.tracking.store import open_client

    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a bar per download says nothing
    client = open_client(resolve_tracking_uri(args.tracking_uri))
    dest = export_run(client, args.run_id, args.dest, overwrite=args.overwrite)
    print(f"wrote {dest}: load it with SentenceTransformer({str(dest)!r})")
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    _add_sweep, _add_resume, _add_sync, _add_compare, _add_export,
)
