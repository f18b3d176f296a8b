"""The study sub-command: ``dashboard`` (optuna-dashboard on a sweep's Optuna study)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sentsweep.cli.common import add_sweep_folder


def _add_dashboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dashboard", help="optuna-dashboard on a sweep's Optuna study (live while it runs)",
                       description="Serve the sweep's Optuna study (its journal in the sweep folder, local or s3://) "
                       "with optuna-dashboard on 127.0.0.1, until interrupted.")
    add_sweep_folder(p)
    p.add_argument("--port", type=int, default=8080, help="default: %(default)s")
    p.set_defaults(handler=cmd_dashboard)


def cmd_dashboard(args: argparse.Namespace) -> int:
    from sentsweep.platform.search.study_store import serve_dashboard, sweep_study_storage

    storage, study = sweep_study_storage(args.sweep_dir, args.storage_endpoint_url)

    def ready(address: str) -> None:
        print(f"optuna-dashboard of study {study} in {args.sweep_dir}: open {address} (its token is this session's; "
              "requests without it are refused); Ctrl-C stops it", flush=True)

    serve_dashboard(storage, host="127.0.0.1", port=args.port, on_ready=ready)
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_dashboard,)
