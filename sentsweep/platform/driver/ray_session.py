"""The Ray a sweep runs in: a joined cluster, or a local Ray on loopback with a token of its session. A killed driver's
local Ray leaves agents listening, so the driver marks its session folder, and a later local start ends what a gone
driver left (:func:`end_stale_sessions`); an unmarked folder (another program's Ray) is never touched."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentsweep._compat.ray import reload_auth_settings, set_single_machine, tune_propagating_none_of
from sentsweep.credentials import ACCESS_KEY, RAY_AUTH_MODE_ENV, RAY_TOKEN_ENV, RAY_TOKEN_PATH_ENV, SECRET_KEY
from sentsweep.errors import ConfigError
from sentsweep.platform.config import joins_ray_cluster
from sentsweep.platform.tracking.store import hidden_from_workers

logger = logging.getLogger(__name__)

#: Environment of every Ray worker of a sweep. ``TUNE_FUNCTION_THREAD_TIMEOUT_S``: how long a reused actor
#: waits for the previous trial's thread to end (Ray's default, 2 s, is shorter than a stopped trial's
#: teardown on a loaded node: closing its MLflow run, removing its work folder; a reset that times out fails
#: the next trial with "Trainable runner reuse requires reset_config()").
WORKER_ENV = {"TUNE_FUNCTION_THREAD_TIMEOUT_S": "120"}
#: Storage keys Ray Tune would copy from the driver's environment into every trial actor's runtime_env, which Ray's
#: runtime-env agent logs and its State API shows: a local Ray's trials inherit them, a cluster's nodes hold their own
#: (or get them with ``--forward-credentials``, in the job's runtime_env).
TUNE_HELD_BACK = (ACCESS_KEY, SECRET_KEY, "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")
#: Ray's switch between single-machine mode (``"0"``: loopback) and cluster mode.
CLUSTER_MODE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
#: The file in a Ray session folder naming the sentsweep driver that started that Ray.
DRIVER_MARKER = "sentsweep_driver.json"


@contextlib.contextmanager
def ray_session(address: str | None = None, *, log_to_driver: bool = False,
                env: Mapping[str, str] | None = None, hide: Collection[str] = ()) -> Iterator[None]:
    """Use the running Ray, else connect to ``address`` (or ``RAY_ADDRESS``) or start a new local one, never a cluster
    somebody started here with ``ray start``; the workers get :data:`WORKER_ENV` and ``env``, a local Ray's processes
    neither the tracking credentials nor the variables ``hide`` names, Tune's trials none of :data:`TUNE_HELD_BACK`."""
    import ray

    if ray.is_initialized():
        with tune_propagating_none_of(TUNE_HELD_BACK):
            yield
        return
    joins = joins_ray_cluster(address)
    with contextlib.nullcontext() if joins else local_ray_settings(), tune_propagating_none_of(TUNE_HELD_BACK):
        with contextlib.nullcontext() if joins else hidden_from_workers(hide):
            context = ray.init(address=address if joins else "local", include_dashboard=False,
                               log_to_driver=log_to_driver, configure_logging=True, logging_level="WARNING",
                               runtime_env={"env_vars": {**WORKER_ENV, **(env or {})}})
        if not joins:
            tidy_local_ray(context.address_info.get("session_dir"))
        try:
            yield
        finally:
            ray.shutdown()


def refuse_unanswered_ray(address: str | None, timeout_s: float = 5.0) -> None:
    """:class:`ConfigError` when nothing listens where ``address`` (else ``RAY_ADDRESS``) names a Ray cluster:
    ``ray.init`` would wait for it without end. Ray reaches a loopback host at the node's own address too."""
    from ray.util import get_node_ip_address

    given = address or os.environ.get("RAY_ADDRESS", "")
    host, _, port = given.removeprefix("ray://").rpartition(":")
    if "://" in host or not port.isdigit():
        return  # "local", "auto" and other forms are Ray's to resolve
    hosts = [host, get_node_ip_address()] if host in ("localhost", "127.0.0.1") else [host]
    reason = ""
    for name in hosts:
        try:
            socket.create_connection((name, int(port)), timeout=timeout_s).close()
            return
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    raise ConfigError(f"no Ray cluster answers at {given} ({reason}); start one (`ray start --head`) or fix the "
                      "address", field="--address" if address else "RAY_ADDRESS")


@contextlib.contextmanager
def local_ray_settings() -> Iterator[None]:
    """A Ray started inside keeps every address on 127.0.0.1 and authenticates with a token kept in this process's
    environment (Ray's own file would be readable by the other users of a shared host); restored after."""
    values = {CLUSTER_MODE_ENV: "0"}
    if os.environ.get(RAY_AUTH_MODE_ENV, "").lower() != "disabled" and not os.environ.get(RAY_TOKEN_ENV) \
            and not os.environ.get(RAY_TOKEN_PATH_ENV):
        values |= {RAY_AUTH_MODE_ENV: "token", RAY_TOKEN_ENV: secrets.token_hex(32)}
    before_single = set_single_machine(True)
    try:
        with ray_auth(values):
            yield
    finally:
        set_single_machine(before_single)


@contextlib.contextmanager
def ray_auth(values: Mapping[str, str | None]) -> Iterator[None]:
    """This process's Ray variables set to ``values`` inside (None: unset), then restored; Ray's auth config and its
    cached token read again at both ends. Nothing is written."""
    saved = {name: os.environ.get(name) for name in values}
    _set_environ(values)
    try:
        yield
    finally:
        _set_environ(saved)


def _set_environ(values: Mapping[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    reload_auth_settings()


@dataclass(frozen=True)
class Driver:
    """A driver process, by its pid and its start time (a pid alone may be reused)."""

    pid: int
    started: float


def driver_alive(driver: Driver) -> bool:
    """Whether the process ``driver`` names still runs (the same pid started at the same time)."""
    import psutil

    try:
        return abs(psutil.Process(driver.pid).create_time() - driver.started) < 1.0
    except psutil.Error:
        return False


def mark_session(session_dir: Path, driver: Driver) -> None:
    """Name ``driver`` in the session folder of the local Ray it started."""
    (session_dir / DRIVER_MARKER).write_text(json.dumps({"pid": driver.pid, "started": driver.started}))


def stale_sessions(root: Path, alive: Callable[[Driver], bool] = driver_alive) -> list[Path]:
    """The marked session folders under ``root`` (Ray's temp folder) whose driver is gone."""
    stale = []
    for marker in sorted(root.glob(f"session_*/{DRIVER_MARKER}")):
        if marker.parent.is_symlink():  # Ray's ``session_latest`` names a folder listed anyway
            continue
        try:
            named = json.loads(marker.read_text())
            driver = Driver(int(named["pid"]), float(named["started"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # half-written by a driver killed while writing it: looked at no further
        if not alive(driver):
            stale.append(marker.parent)
    return stale


def holders(session_dir: Path, processes: Iterable[Any]) -> list[int]:
    """The pids of ``processes`` (psutil's) holding a file under ``session_dir`` open (unreadable ones: skipped)."""
    inside = str(session_dir.resolve()) + os.sep
    found = []
    for process in processes:
        try:
            paths = [f.path for f in process.open_files()]
        except Exception:  # noqa: BLE001 - gone meanwhile, or another user's (psutil's AccessDenied)
            continue
        if any(path.startswith(inside) for path in paths):
            found.append(process.pid)
    return found


def end_processes(pids: list[int], grace_s: float = 5.0) -> None:
    """SIGTERM to ``pids``, then SIGKILL to those still there after ``grace_s`` (a pid reused meanwhile is spared)."""
    import psutil

    processes = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):  # gone already
            process = psutil.Process(pid)
            process.terminate()
            processes.append(process)
    for process in psutil.wait_procs(processes, timeout=grace_s)[1]:
        with contextlib.suppress(psutil.Error):
            process.kill()


def own_processes() -> list[Any]:
    """This user's processes, this one excepted (psutil skips one gone meanwhile; an unreadable one has no uids)."""
    import psutil

    return [p for p in psutil.process_iter(["uids"])
            if p.pid != os.getpid() and p.info["uids"] is not None and p.info["uids"].real == os.getuid()]


def end_stale_sessions(root: Path, *, alive: Callable[[Driver], bool] = driver_alive,
                       processes: Callable[[], Iterable[Any]] = own_processes,
                       end: Callable[[list[int]], None] = end_processes) -> dict[Path, list[int]]:
    """End what the local Rays under ``root`` whose driver is gone left; the pids ended, by session folder."""
    ended: dict[Path, list[int]] = {}
    stale = stale_sessions(root, alive)
    listed = list(processes()) if stale else []
    for session in stale:
        if pids := holders(session, listed):
            end(pids)
            logger.warning("ended %d process(es) of the local Ray a killed driver left (%s)", len(pids), session.name)
        (session / DRIVER_MARKER).unlink(missing_ok=True)
        ended[session] = pids
    return ended


def tidy_local_ray(session_dir: str | None) -> None:
    """Mark this driver's local Ray session folder; end what killed drivers' local Rays left beside it (best effort)."""
    if not session_dir:
        return
    try:
        import psutil

        session = Path(session_dir)
        mark_session(session, Driver(os.getpid(), psutil.Process().create_time()))
        end_stale_sessions(session.parent)
    except Exception as exc:  # noqa: BLE001 - tidying never stops a sweep
        logger.debug("could not tidy the local Ray sessions beside %s: %s", session_dir, exc)
