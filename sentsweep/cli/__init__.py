"""The ``sentsweep`` command line: the only code that knows argparse.

One module per group of sub-commands, each with its ``COMMANDS`` (functions that add their parsers):
:mod:`.training` (``train``, ``evaluate``), :mod:`.preprocess` (``negate``, ``parse``, ``neighbours``),
:mod:`.sweeps` (``sweep``, ``resume``, ``compare``, ``export``) and :mod:`.cluster` (``submit``, ``jobs``).
A handler takes the parsed arguments and returns an exit status; heavy imports (torch, Ray, MLflow) happen
inside it so that ``sentsweep --help`` is instant. Errors a user can cause
(:class:`~sentsweep.errors.SentsweepError`) are printed as one line, without a traceback, and exit with
status 2. ``python -m sentsweep.cli`` is the same command (what Ray jobs run).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from sentsweep.cli import cluster, preprocess, sweeps, training
from sentsweep.credentials import masked_output
from sentsweep.errors import SentsweepError

Handler = Callable[[argparse.Namespace], int]

COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    *training.COMMANDS, *preprocess.COMMANDS, *sweeps.COMMANDS, *cluster.COMMANDS,
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
    """Run ``sentsweep ARGV``; its exit status (2 for a user's error, printed on one line)."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    with masked_output():  # credentials never shown, whoever prints them (sentsweep.credentials)
        try:
            return handler(args)
        except SentsweepError as exc:
            print(f"sentsweep {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"sentsweep {args.command}: interrupted", file=sys.stderr)
            return 130
