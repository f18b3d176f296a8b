"""The jobs of one Ray cluster through its dashboard's Jobs API, and the jobs as ``sentsweep jobs`` shows them:
never a runtime environment, URIs' passwords masked. Every failure is one :class:`ClusterError` line; the token
travels as the ``Authorization`` header of every request, whatever ``RAY_AUTH_MODE`` this process has."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sentsweep.cluster.credentials import RayToken, auth_failure
from sentsweep.cluster.jobspec import JobSpec
from sentsweep.credentials import mask_text, mask_uri
from sentsweep.errors import SentsweepError
from sentsweep.tables import aligned_table

if TYPE_CHECKING:
    from ray.job_submission import JobDetails

#: The Ray dashboard of a head on this machine (or a port-forwarded one).
DEFAULT_ADDRESS = "http://127.0.0.1:8265"
#: Where the default address comes from, in order (the ``ray job`` CLI reads the same two).
ADDRESS_ENV = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
#: How long ``follow`` tries to get a lost connection back: the 10 minutes KubeRay's workers wait for a restarted
#: head (``RAY_gcs_rpc_server_reconnect_timeout_s``), and how often.
RECONNECT_S, RECONNECT_POLL_S = 600.0, 2.0


class ClusterError(SentsweepError):
    """The Ray cluster cannot be reached, refused a request, or has no such job (one line, no traceback)."""


def resolve_address(explicit: str | None, environ: Mapping[str, str]) -> str:
    """``--address``, else ``$RAY_API_SERVER_ADDRESS``, else ``$RAY_ADDRESS``, else :data:`DEFAULT_ADDRESS`."""
    found = (environ.get(name, "").strip() for name in ADDRESS_ENV)
    return explicit or next((value for value in found if value), DEFAULT_ADDRESS)


def _client_errors() -> tuple[type[BaseException], ...]:
    from ray.exceptions import AuthenticationError

    errors: list[type[BaseException]] = [OSError, RuntimeError, ValueError, AuthenticationError]
    with contextlib.suppress(ImportError):
        import aiohttp

        errors.append(aiohttp.ClientError)
    return tuple(errors)


def _auth_status(exc: BaseException) -> int | None:
    """401 or 403 when ``exc`` is the dashboard refusing a request for want of a (valid) token."""
    from ray.exceptions import AuthenticationError

    if isinstance(exc, AuthenticationError):  # Ray's SDK: "Authentication required" (401) or "... failed" (403)
        return 403 if "Authentication failed" in str(exc.message) else 401
    status = getattr(exc, "status", None)  # aiohttp, for the log stream's websocket
    return status if status in (401, 403) else None


class ClusterJobs:
    """The jobs of one Ray cluster, through its dashboard's Jobs API; failures are :class:`ClusterError`."""

    def __init__(self, address: str, *, token: RayToken | None = None) -> None:
        from ray.job_submission import JobSubmissionClient

        self.address = address
        self.token = token
        with self._errors(connecting=True):
            self.client = JobSubmissionClient(address, headers=token.headers() if token else None)

    @contextlib.contextmanager
    def _errors(self, job_id: str | None = None, *, connecting: bool = False) -> Iterator[None]:
        try:
            yield
        except _client_errors() as exc:
            if (status := _auth_status(exc)) is not None:
                raise auth_failure(status, self.address, self.token) from None
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if connecting:
                raise ClusterError(f"cannot reach the Ray dashboard at {self.address} ({text}); is the head running "
                                   "and its port 8265 reachable (e.g. kubectl port-forward)?") from None
            if job_id is not None and ("404" in text or "does not exist" in text):
                raise ClusterError(f"no job '{job_id}' on the Ray cluster at {self.address} "
                                   f"(sentsweep jobs list --address {self.address})") from None
            if isinstance(exc, RuntimeError | ValueError) and "closed unexpectedly" not in text:  # not a lost stream
                raise ClusterError(f"the Ray cluster at {self.address} refused the request: {text}") from None
            raise ClusterError(f"lost the connection to the Ray dashboard at {self.address}: {text}") from None

    def submit(self, spec: JobSpec, submission_id: str | None = None) -> str:
        """Submit ``spec`` (uploading its working dir); returns the job's submission id."""
        with self._errors():
            return self.client.submit_job(entrypoint=spec.entrypoint, runtime_env=spec.runtime_env,
                                          metadata=spec.metadata, submission_id=submission_id, **spec.placement)

    def info(self, job_id: str) -> JobDetails:
        with self._errors(job_id):
            return self.client.get_job_info(job_id)

    def status(self, job_id: str) -> str:
        with self._errors(job_id):
            return str(self.client.get_job_status(job_id).value)

    def logs(self, job_id: str) -> str:
        with self._errors(job_id):
            return self.client.get_job_logs(job_id)

    def list(self) -> list[JobDetails]:
        with self._errors():
            return self.client.list_jobs()

    def wait(self, job_id: str, *, timeout: float | None = None, poll: float = 1.0,
             until: frozenset[str] = TERMINAL) -> str:
        """Poll until the job's status is in ``until``; returns it (the last one seen after ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status(job_id)
            if status in until or (deadline is not None and time.monotonic() > deadline):
                return status
            time.sleep(poll)

    def follow(self, job_id: str, write: Callable[[str], None], *, notice: Callable[[str], None] = print,
               clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> str:
        """Stream the job's logs to ``write`` until it ends; returns its final status. A connection lost while
        following (a dropped port-forward, a head restarting under GCS fault tolerance) is tried again for up to
        :data:`RECONNECT_S` seconds, each loss and return told to ``notice``. Ray streams a log from its start on
        every connection, so the characters already written are skipped."""
        self.status(job_id)  # an unknown id fails here, by name
        written, lost_at = 0, None

        async def tail() -> None:
            nonlocal written, lost_at
            seen = 0
            async for chunk in self.client.tail_job_logs(job_id):
                if lost_at is not None:
                    notice(f"reconnected to the Ray dashboard at {self.address}; the log goes on")
                    lost_at = None
                new, seen = chunk[max(0, written - seen):], seen + len(chunk)
                if new:
                    write(new)
                    written += len(new)

        while True:
            try:
                asyncio.run(tail())
                status = str(self.client.get_job_status(job_id).value)
                break
            except _client_errors() as exc:
                text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if _auth_status(exc) is not None or "does not exist" in text or "404" in text or (
                        lost_at is not None and clock() - lost_at > RECONNECT_S):
                    with self._errors(job_id):
                        raise
                if lost_at is None:
                    lost_at = clock()
                    notice(f"lost the connection to the Ray dashboard at {self.address} ({text}); trying again "
                           f"for up to {RECONNECT_S / 60:.0f} min (the job goes on)")
                sleep(RECONNECT_POLL_S)
        return status if status in TERMINAL else self.wait(job_id, timeout=60, poll=0.5)

    def stop(self, job_id: str, *, wait: float | None = 60.0) -> str:
        """Ask the job to stop (SIGTERM, then SIGKILL); waits up to ``wait`` s and returns its status."""
        status = self.status(job_id)
        if status in TERMINAL:
            return status
        with self._errors(job_id):
            self.client.stop_job(job_id)
        return self.wait(job_id, timeout=wait, poll=0.5) if wait else self.status(job_id)


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
    if not (ordered := sorted(jobs, key=lambda j: j.start_time or 0, reverse=True)):
        return "no jobs"
    rows = [(job_name(info), str(getattr(info.status, "value", info.status)), _when(info.start_time),
             _duration(info.start_time, info.end_time), (info.metadata or {}).get("sweep", "-"),
             _shortened(mask_text(info.entrypoint, secrets))) for info in ordered]
    return aligned_table(rows, ("JOB", "STATUS", "STARTED", "DURATION", "SWEEP", "ENTRYPOINT"))


def _shortened(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters (masked before: a cut could split a URI's password from its ``@``)."""
    return text if len(text) <= width else text[: width - 3] + "..."
