"""The config sub-command: ``config reference`` prints the configuration reference (docs/configuration.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _add_config(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="the configuration reference",
                       description="Print the configuration reference generated from the typed configs: every field "
                       "of the sweep config and of each method's config, and the search-space syntax.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    reference = actions.add_parser("reference", help="print docs/configuration.md (Markdown)")
    reference.set_defaults(handler=cmd_reference)


def cmd_reference(args: argparse.Namespace) -> int:
    from sentsweep.platform.config_reference import reference

    print(reference(), end="")
    return 0


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (_add_config,)
