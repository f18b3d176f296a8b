"""A sweep's owner: ``$SENTSWEEP_OWNER`` when set (``sentsweep submit`` sets it to the submitting user), else the
login name of the process. The manifest records it when the folder is created.
"""

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

