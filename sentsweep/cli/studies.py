"""The study sub-command: ``dashboard`` (optuna-dashboard on a sweep's mirrored Optuna study)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from sentsweep.cli.common import add_sweep_folder


def _add_dashboard(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dashboard", help="optuna-dashboard on a sweep's Optuna study (live while it runs)",
                       description="Serve the sweep's Optuna study (mirrored to its RDB storage as trials finish: "
                       "optuna.db in the sweep folder, or the sweep's optuna_storage URL) with optuna-dashboard on "
                       "127.0.0.1, until interrupted.")
    add_sweep_folder(p)
    p.add_argument("--port", type=int, default=8080, help="default: %(default)s")
    p.add_argument("--optuna-storage", default=None, metavar="URL",
                   help="the database URL of the sweep's study, as you know it; must equal the sweep's (required for "
                   "an s3:// folder: a folder in shared storage is not trusted with your database login)")
    p.set_defaults(handler=cmd_dashboard)


def cmd_dashboard(args: argparse.Namespace) -> int:
    from sentsweep.credentials import mask_uri
    from sentsweep.platform.optuna_storage import serve_dashboard, sweep_storage_url

    url, study = sweep_storage_url(args.sweep_dir, args.storage_endpoint_url, args.optuna_storage)

    def ready(address: str) -> None:
        print(f"optuna-dashboard of study {study} in {mask_uri(url)}: open {address} (its token is this session's; "
              "requests without it are refused); Ctrl-C stops it", flush=True)

    serve_dashboard(url, host="127.0.0.1", port=args.port, on_ready=ready)
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_dashboard,)
