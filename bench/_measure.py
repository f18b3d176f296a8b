"""Peak memory of a benchmark phase: resident set size (RSS) of the process and, on a GPU, CUDA max allocated.

Linux keeps the process's peak RSS (``VmHWM`` in ``/proc/self/status``); writing ``5`` to
``/proc/self/clear_refs`` resets it, so every phase (ours, then the reference, in the same process) gets its
own peak. Where the reset is not allowed (or not Linux) the figure is the peak since the process started
(``resource.getrusage``), and :class:`Peak` says so in its ``label``.

    with Peak() as peak:
        run()
    print(peak.label)  # "812 MiB RSS" (+ ", 1.2 GiB CUDA" on a GPU)
"""

from __future__ import annotations

import re
import resource
import sys
from pathlib import Path
from types import TracebackType

import torch

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def reset_peak_rss() -> bool:
    """Reset the process's peak RSS to its current RSS; False where the OS does not allow it."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def peak_rss_mib() -> float:
    """Peak RSS of this process in MiB (since the last successful :func:`reset_peak_rss`)."""
    try:
        match = re.search(r"^VmHWM:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        match = None
    if match:
        return int(match.group(1)) / 1024
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux, bytes on macOS
    return maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


class Peak:
    """Context manager: peak RSS (and CUDA max allocated) while its block runs."""

    def __init__(self) -> None:
        self.rss_mib = 0.0
        self.cuda_mib: float | None = None
        self.since_start = False

    def __enter__(self) -> Peak:
        self.since_start = not reset_peak_rss()
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.rss_mib = peak_rss_mib()
        if torch.cuda.is_available():
            self.cuda_mib = torch.cuda.max_memory_allocated() / 2**20

    @property
    def label(self) -> str:
        """``"812 MiB RSS"`` (``"process ..."`` when the peak could not be reset), CUDA max allocated after it."""
        text = f"{'process ' if self.since_start else ''}{self.rss_mib:,.0f} MiB RSS"
        if self.cuda_mib is not None:
            text += f", {self.cuda_mib:,.0f} MiB CUDA"
        return text
