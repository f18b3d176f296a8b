"""The temporary work folder of a training loop that was given none.

The folder's name holds the process id (``sentsweep-loop-<pid>-<random>``). A process killed by SIGKILL runs no
finalizer, so its folder stays; the next loop in the same temporary folder removes the folders of processes that no
longer exist. A folder whose process id is alive is kept, even when the id was reused by another program.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "sentsweep-loop-"


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale(parent: Path) -> list[Path]:
    """Remove the loop folders under ``parent`` whose process is gone; the folders removed."""
    removed = []
    for folder in parent.glob(f"{PREFIX}*-*"):
        pid = folder.name[len(PREFIX):].split("-", 1)[0]
        if pid.isdigit() and folder.is_dir() and not process_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def new_loop_folder() -> tempfile.TemporaryDirectory[str]:
    """A temporary folder that goes with this process (its finalizer), after removing stale ones."""
    parent = Path(tempfile.gettempdir())
    remove_stale(parent)
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-", dir=parent, ignore_cleanup_errors=True)
