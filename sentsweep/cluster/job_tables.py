"""Jobs shown to people: one job's details, the cluster's job list (never a job's runtime environment; passwords of
URIs in entrypoints and messages masked: the list holds jobs submitted without sentsweep too)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sentsweep.credentials import mask_text, mask_uri
from sentsweep.tables import aligned_table

if TYPE_CHECKING:
    from ray.job_submission import JobDetails


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S") if ms else "-"


def _duration(start: int | None, end: int | None) -> str:
    if not start:
        return "-"
    seconds = int(((end or time.time() * 1000) - start) / 1000)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def job_name(info: JobDetails) -> str:
    """The submission id a user gave or Ray picked (else the driver's job id)."""
    return info.submission_id or info.job_id or "?"


def describe_job(info: JobDetails) -> str:
    """A job's status, message, entrypoint, sweep, times and exit code (never its runtime environment)."""
    status = getattr(info.status, "value", info.status)
    metadata = info.metadata or {}
    lines = [f"job {job_name(info)}: {status}"]
    if info.message:
        lines.append(f"  message:    {mask_uri(info.message.strip())}")
    if metadata.get("sweep"):
        lines.append(f"  sweep:      {metadata['sweep']} ({metadata.get('kind', 'sweep')}, "
                     f"config {metadata.get('config', '-')}, code {metadata.get('ship', '-')})")
    lines.append(f"  entrypoint: {mask_uri(info.entrypoint)}")
    lines.append(f"  started:    {_when(info.start_time)}   ended: {_when(info.end_time)}   "
                 f"duration: {_duration(info.start_time, info.end_time)}")
    if info.driver_exit_code is not None:
        lines.append(f"  exit code:  {info.driver_exit_code}")
    if info.error_type:
        lines.append(f"  error:      {info.error_type}")
    return "\n".join(lines)


def jobs_table(jobs: Sequence[JobDetails], secrets: Sequence[str] = ()) -> str:
    """Jobs newest first: id, status, start, duration, sweep, entrypoint (URIs' passwords and ``secrets`` masked
    before it is cut to the table's width)."""
    ordered = sorted(jobs, key=lambda j: j.start_time or 0, reverse=True)
    if not ordered:
        return "no jobs"
    rows = [(job_name(info), str(getattr(info.status, "value", info.status)), _when(info.start_time),
             _duration(info.start_time, info.end_time), (info.metadata or {}).get("sweep", "-"),
             _shortened(mask_text(info.entrypoint, secrets))) for info in ordered]
    return aligned_table(rows, ("JOB", "STATUS", "STARTED", "DURATION", "SWEEP", "ENTRYPOINT"))


def _shortened(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters (masked before: a cut could split a URI's password from its ``@``)."""
    return text if len(text) <= width else text[: width - 3] + "..."
