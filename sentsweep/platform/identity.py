"""A sweep's owner, which its manifest records: ``$SENTSWEEP_OWNER`` (``sentsweep submit`` sets it), else the login."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping

OWNER_ENV = "SENTSWEEP_OWNER"


def sweep_owner(environ: Mapping[str, str] | None = None) -> str:
    """``$SENTSWEEP_OWNER``, else the login name (``$USER``, ``$LOGNAME``, the password database), else
    ``unknown``."""
    environ = os.environ if environ is None else environ
    for name in (OWNER_ENV, "USER", "LOGNAME"):
        value = environ.get(name, "").strip()
        if value:
            return value
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid without an entry (containers)
        return "unknown"

