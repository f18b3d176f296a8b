"""The ``sentsweep`` command line: the only code that knows argparse.

One module per group of sub-commands, each with its ``COMMANDS`` (functions that add their parsers):
:mod:`.training` (``train``, ``evaluate``), :mod:`.preprocess` (``negate``, ``parse``, ``neighbours``),
:mod:`.data` (``data prepare``, ``data list``), :mod:`.sweeps` (``sweep``, ``resume``, ``sync``, ``compare``,
``export``), :mod:`.studies` (``dashboard``) and :mod:`.cluster` (``submit``, ``jobs``).
A handler takes the parsed arguments and returns an exit status; heavy imports (torch, Ray, MLflow) happen
inside it so that ``sentsweep --help`` is instant. ``python -m sentsweep.cli`` is the same command (what Ray
jobs run). Exit statuses:

- 0: done; 1: a sweep in which no trial finished, or an unexpected error: one line naming a log file
  (``<cache>/logs/sentsweep-<time>-<pid>.log``, the cache being ``$SENTSWEEP_CACHE`` or ~/.cache/sentsweep)
  that holds the full chained traceback;
- 2: an error a user can cause (:class:`~sentsweep.errors.SentsweepError`: config, data, a sweep held by
  another process), one line without a traceback;
- 75 (:data:`~sentsweep.platform.driver.interrupt.INTERRUPTED_EXIT`): a sweep stopped by SIGINT or SIGTERM after
  Ray Tune saved its state; the line printed names the ``sentsweep resume`` command that continues it;
- 130: interrupted before anything could be saved.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from sentsweep.cli import cluster, data, preprocess, reference, studies, sweeps, training
from sentsweep.cli.common import write_error_log
from sentsweep.credentials import masked_output
from sentsweep.errors import SentsweepError
from sentsweep.platform.driver.interrupt import INTERRUPTED_EXIT, SweepInterrupted

Handler = Callable[[argparse.Namespace], int]

COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    *training.COMMANDS, *preprocess.COMMANDS, *data.COMMANDS, *sweeps.COMMANDS, *studies.COMMANDS,
    *cluster.COMMANDS, *reference.COMMANDS,
)
"""Every sub-command, in the order ``sentsweep --help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used to check that Kubernetes entrypoints parse)."""
    parser = argparse.ArgumentParser(
        prog="sentsweep",
        description="Hyperparameter sweeps for sentence-embedding training (SNCSE, CoSENT, multi-view) on "
        "Ray Tune + Optuna, tracked in MLflow.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def _version() -> str:
    from sentsweep import __version__

    return f"sentsweep {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``sentsweep ARGV``; its exit status (see the module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    from sentsweep.yaml_io import blaming_overrides

    with masked_output():  # credentials never shown, whoever prints them (sentsweep.credentials)
        try:
            with blaming_overrides(getattr(args, "overrides", ())):
                return handler(args)
        except SweepInterrupted as exc:
            print(f"sentsweep {args.command}: {exc}", file=sys.stderr)
            return INTERRUPTED_EXIT
        except SentsweepError as exc:
            print(f"sentsweep {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"sentsweep {args.command}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:  # noqa: BLE001 - a bug or an outage: one line here, the traceback in the log
            log = write_error_log(exc, argv)
            message = " ".join(str(exc).split())
            message = message if len(message) <= 300 else message[:297] + "..."
            print(f"sentsweep {args.command}: unexpected error: {type(exc).__name__}: {message} (full traceback "
                  f"in {log})", file=sys.stderr)
            return 1
