"""The sweep's Optuna study, mirrored to an Optuna RDB storage as its trials finish: what optuna-dashboard reads.

The searcher's own study lives in memory and is pickled into Tune's state (:mod:`.search`); nothing outside the
driver can read it while the sweep runs. :class:`StudyMirror` copies each trial the searcher has told Optuna
(COMPLETE, PRUNED, FAIL, with its parameters, distributions, intermediate values, user attributes and
constraints) into a study of the same name in an RDB storage (:func:`study_storage_url`):

- by default ``sqlite:///<sweep folder>/optuna.db``, beside the sweep (a local sweep folder);
- ``optuna_storage`` in the sweep config, e.g. ``postgresql://optuna@db/optuna`` on a cluster (its password, if
  the URL carries one, goes to ``PGPASSWORD``: :mod:`sentsweep.credentials`); a sweep folder on S3 has no default.

``sentsweep dashboard SWEEP`` serves that storage with optuna-dashboard (:func:`serve_dashboard`). The mirror is
best-effort: a storage that refuses a write is reported once and never fails the sweep; it is tried again
:data:`RETRY_AFTER_S` later, and the trials that finished meanwhile are copied then (the searcher hands it the
whole study, :meth:`StudyMirror.add_all`). It is pickled with the
searcher (without its connection), so a resumed sweep keeps mirroring; a trial already mirrored (a trial that ran
again after a resume) is not copied twice. Trials a warm start brought in (:mod:`.warm_start`) are not copied:
they belong to the earlier sweep's study.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from sentsweep.errors import ConfigError

if TYPE_CHECKING:
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.storage import SweepLocation

#: The sqlite file in a local sweep folder.
STUDY_DB = "optuna.db"
#: The user attribute of a mirrored trial naming its number in the searcher's study.
SOURCE_NUMBER = "sweep_trial_number"
#: The user attribute of a trial that came from an earlier sweep (set by :mod:`.warm_start`).
WARM_START_ATTR = "warm_start_from"
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
logger = logging.getLogger(__name__)


def study_storage_url(config: SweepConfig, location: SweepLocation) -> str | None:
    """Where a sweep's study is mirrored: ``optuna_storage``, else the sqlite file in a local sweep folder, else
    None (a remote sweep folder and no URL)."""
    if config.optuna_storage:
        return config.optuna_storage
    if location.filesystem is None and "://" not in location.uri:
        return f"sqlite:///{Path(location.uri) / STUDY_DB}"
    return None


def study_mirror(config: SweepConfig, location: SweepLocation) -> StudyMirror | None:
    """The mirror of a new sweep's study (named as the sweep's folder, so that sweeps sharing a database stay
    apart), or None where :func:`study_storage_url` has no place for it."""
    url = study_storage_url(config, location)
    if url is None:
        return None
    return StudyMirror(url, location.name, ["maximize" if mode == "max" else "minimize" for mode in config.modes])


def is_warm_start(trial: FrozenTrial) -> bool:
    """Whether a trial of a study came from an earlier sweep."""
    return WARM_START_ATTR in trial.user_attrs


#: Seconds after a refused write before the mirror tries its storage again.
RETRY_AFTER_S = 60.0
#: Seconds a connection to a PostgreSQL or MySQL storage may take to open (the drivers' ``connect_timeout``). Without
#: it, a database host that drops packets, or a port whose server accepts but never answers, holds the driver for the
#: kernel's TCP timeout or for ever, at each try: the mirror writes from the searcher, in Tune's event loop.
CONNECT_TIMEOUT_S = 5
#: The URL schemes (before any ``+driver``) whose drivers take :data:`CONNECT_TIMEOUT_S`.
_TIMED_CONNECT = frozenset({"postgresql", "postgres", "mysql"})


def rdb_storage(url: str) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage on ``url`` whose connections open within :data:`CONNECT_TIMEOUT_S` (PostgreSQL, MySQL)
    and are checked before use (``pool_pre_ping``: a connection the database closed meanwhile is opened again instead
    of failing the write)."""
    from urllib.parse import urlsplit

    scheme = urlsplit(url).scheme.split("+")[0]
    connect_args = {"connect_timeout": CONNECT_TIMEOUT_S} if scheme in _TIMED_CONNECT else {}
    return optuna.storages.RDBStorage(url, engine_kwargs={"connect_args": connect_args, "pool_pre_ping": True})


class StudyMirror:
    """Copies finished trials of a study into the study ``study_name`` of an RDB storage at ``url``."""

    def __init__(self, url: str, study_name: str, directions: list[str]) -> None:
        self.url = url
        self.study_name = study_name
        self.directions = directions
        self._study: optuna.Study | None = None
        self._mirrored: set[int] = set()
        self._down_until: float | None = None  # after a refused write: when to try again (time.monotonic)

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "study_name": self.study_name, "directions": self.directions}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def open(self) -> optuna.Study:
        """The mirror study (created when missing), and which trials it already holds."""
        if self._study is None:
            self._study = optuna.create_study(storage=rdb_storage(self.url), study_name=self.study_name,
                                              load_if_exists=True,
                                              directions=self.directions)
            self._mirrored = {int(t.user_attrs[SOURCE_NUMBER]) for t in self._study.get_trials(deepcopy=False)
                              if SOURCE_NUMBER in t.user_attrs}
        return self._study

    @property
    def down(self) -> bool:
        """Whether the storage refused a write less than :data:`RETRY_AFTER_S` ago (nothing is tried meanwhile)."""
        return self._down_until is not None and time.monotonic() < self._down_until

    def add(self, trial: FrozenTrial) -> bool:
        """Copy one finished trial (not one from a warm start, not one already there); False when skipped, while
        the storage is :attr:`down`, or when it refused the trial (reported once per outage: a dashboard is never
        worth a failed sweep)."""
        if self.down or trial.state not in _FINISHED or is_warm_start(trial):
            return False
        try:
            study = self.open()
            if trial.number in self._mirrored:
                return False
            study.add_trial(optuna.trial.create_trial(
                state=trial.state, values=trial.values, params=trial.params, distributions=trial.distributions,
                user_attrs={**trial.user_attrs, SOURCE_NUMBER: trial.number},
                intermediate_values=trial.intermediate_values, constraints=trial.constraints or None,
            ))
        except Exception as exc:  # noqa: BLE001 - any storage error: the sweep goes on without its mirror
            from sentsweep.credentials import mask_uri

            if self._down_until is None:
                logger.warning("the Optuna study is not mirrored to %s for now (tried again every %.0f s): %s: %s",
                               mask_uri(self.url), RETRY_AFTER_S, type(exc).__name__, exc)
            self._down_until = time.monotonic() + RETRY_AFTER_S
            self._study = None  # a new connection next time
            return False
        if self._down_until is not None:
            logger.warning("the Optuna study is mirrored again")
            self._down_until = None
        self._mirrored.add(trial.number)
        return True

    def add_all(self, study: optuna.Study) -> int:
        """Copy every finished trial of ``study`` not mirrored yet; how many were copied."""
        copied = 0
        for trial in study.get_trials(deepcopy=False, states=_FINISHED):
            if self.down:
                break
            copied += self.add(trial)
        return copied


def sweep_storage_url(sweep_dir: str, endpoint_url: str | None = None,
                      optuna_storage: str | None = None) -> tuple[str, str]:
    """The RDB storage URL of an existing sweep folder and its study's name; a clear error when it has none, and
    for a remote folder unless ``optuna_storage`` (``--optuna-storage``) names it
    (:func:`~sentsweep.platform.folder_trust.trusted_optuna_storage`)."""
    from sentsweep.platform.config import resolve_sweep_folder
    from sentsweep.platform.folder_trust import trusted_optuna_storage
    from sentsweep.platform.storage import locate

    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    config = manifest.sweep_config()
    url = study_storage_url(config, location)
    if url is None:
        raise ConfigError("the sweep folder is remote and the sweep set no optuna_storage URL: its study was not "
                          "mirrored to a database", file=location.uri)
    url = trusted_optuna_storage(url, location, optuna_storage)
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        raise ConfigError(f"no {STUDY_DB} in the sweep folder yet (no trial has finished, or the sweep predates "
                          "the mirror)", file=location.uri)
    return url, manifest.sweep_name


def dashboard_cookie(port: int) -> str:
    """The name of the cookie a browser gets once it opened the dashboard's URL with its token (:func:`guarded`).

    Browsers keep cookies per host, not per port: with one name for all, a second dashboard opened on another port
    would overwrite the first one's token in the browser and lock it out."""
    return f"sentsweep-dashboard-{port}"


#: requests that change nothing in optuna-dashboard's API
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def guarded(app: Any, port: int, token: str) -> Any:
    """``app`` (a WSGI application) answering only requests that name ``127.0.0.1:port`` or ``localhost:port`` as
    their Host (a page elsewhere cannot reach it through DNS rebinding) and carry ``token``: in the query
    (``?token=``, which then sets an HttpOnly, SameSite=Strict cookie) or in that cookie; a request that changes
    something must come from the dashboard's own page (``Origin``, ``Sec-Fetch-Site``). optuna-dashboard's API
    deletes studies and tells trials, without authentication of its own: without this, any user of the host (the
    loopback port is theirs too) could, with the database login of whoever serves it."""
    import hmac
    import http.cookies
    from urllib.parse import parse_qs

    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    origins = {f"http://{host}" for host in hosts}
    name = dashboard_cookie(port)

    def same_origin(environ: dict[str, Any]) -> bool:
        """Whether a browser sent the request from the dashboard's own page. Browsers keep cookies per host, not per
        port, so a page served on another loopback port gets this port's cookie sent with its requests too; it
        cannot forge ``Origin`` or ``Sec-Fetch-Site``, which browsers put on every request that changes state.
        A client that is no browser sends neither and must hold the token (security review 20, L5)."""
        origin, fetch_site = environ.get("HTTP_ORIGIN"), environ.get("HTTP_SEC_FETCH_SITE")
        return (origin is None or origin in origins) and fetch_site in (None, "same-origin", "none")

    def refuse(start_response: Any, why: str) -> list[bytes]:
        start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
        return [f"{why}\n".encode()]

    def answer(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("HTTP_HOST", "") not in hosts:
            return refuse(start_response, "this dashboard answers requests for 127.0.0.1 or localhost only")
        if environ.get("REQUEST_METHOD", "GET") not in SAFE_METHODS and not same_origin(environ):
            return refuse(start_response, "a change must come from the dashboard's own page")
        jar = http.cookies.SimpleCookie(environ.get("HTTP_COOKIE", ""))
        if name in jar and hmac.compare_digest(jar[name].value, token):
            return app(environ, start_response)
        given = parse_qs(environ.get("QUERY_STRING", "")).get("token", [""])[0]
        if not hmac.compare_digest(given, token):
            return refuse(start_response, "open the URL sentsweep dashboard printed (it carries the token)")

        def with_cookie(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            cookie = f"{name}={token}; HttpOnly; SameSite=Strict; Path=/"
            return start_response(status, [*headers, ("Set-Cookie", cookie)], *rest)

        return app(environ, with_cookie)

    return answer


def dashboard_server(url: str, host: str = "127.0.0.1", port: int = 8080) -> tuple[Any, str]:
    """optuna-dashboard on ``url`` behind :func:`guarded`, listening on ``host:port`` (not yet serving), and the
    URL to open, with a token drawn for the session."""
    import secrets
    import socketserver
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    try:
        from optuna_dashboard import wsgi
    except ImportError:
        raise ConfigError("optuna-dashboard is not installed: pip install 'sentsweep[dashboard]'") from None

    class Server(socketserver.ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:  # the request lines carry the token
            pass

    token = secrets.token_urlsafe(24)
    app = guarded(wsgi(rdb_storage(url)), port, token)
    server = make_server(host, port, app, server_class=Server, handler_class=Quiet)
    return server, f"http://{host}:{port}/dashboard?token={token}"


def serve_dashboard(url: str, host: str = "127.0.0.1", port: int = 8080,
                    on_ready: Callable[[str], None] = print) -> None:
    """:func:`dashboard_server` until interrupted (blocks); ``on_ready`` gets the URL to open once it listens."""
    server, address = dashboard_server(url, host, port)
    with server:
        on_ready(address)
        server.serve_forever()
