"""The sweep's Optuna study: one journal in the sweep folder, its only record (JSON only: reading it runs no code;
on S3 each append is one object written with ``If-None-Match: *``), and ``sentsweep dashboard``, which serves it
live on loopback to the user who started it alone (:func:`guarded`)."""

from __future__ import annotations

import functools
import hmac
import http.cookies
import itertools
import json
import logging
import mmap
import os
import posixpath
import secrets
import socketserver
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import optuna
from optuna.storages.journal import BaseJournalBackend

from sentsweep.errors import ConfigError
from sentsweep.platform.config import resolve_sweep_folder
from sentsweep.platform.location import SweepLocation, locate
from sentsweep.platform.s3 import T, s3_call, s3_client, storage_error

log = logging.getLogger(__name__)

#: The study's journal in the sweep folder (a file; on S3, a folder of numbered objects).
JOURNAL_FILE = "optuna_journal.log"


@dataclass(frozen=True)
class StudyStore:
    uri: str
    endpoint_url: str | None = None

    @property
    def journal_uri(self) -> str:
        return posixpath.join(self.uri, JOURNAL_FILE)

    def storage(self, *, create: bool = True) -> optuna.storages.JournalStorage | None:
        """The study's journal; None when ``create`` is False and the folder holds no study yet."""
        if "://" not in self.uri:
            if create:  # the writer: its first append would continue a line a kill or a full disk cut short
                drop_torn_tail(self.journal_uri)
            elif not Path(self.journal_uri).is_file():
                return None
            return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(self.journal_uri))
        parsed = urlparse(self.uri)
        if parsed.scheme != "s3":
            raise ConfigError(f"a sweep folder on {parsed.scheme}:// cannot hold the Optuna study: use a local "
                              "folder or s3://", field="storage_path")
        backend = S3JournalBackend(parsed.netloc, posixpath.join(parsed.path.lstrip("/"), JOURNAL_FILE),
                                   s3_client(self.endpoint_url))
        return optuna.storages.JournalStorage(backend) if create or backend.read_logs(0) else None


def drop_torn_tail(path: str) -> None:
    """Cut a local journal back to its last whole line. Optuna reads past a last line without its
    newline (no log was counted from it), but an append would join it into one undecodable line, losing that log
    and making every later read fail. A storage error is a :class:`~sentsweep.errors.StorageError` naming it."""
    try:
        with open(path, "r+b") as journal:
            if (size := journal.seek(0, os.SEEK_END)) == 0:
                return
            with mmap.mmap(journal.fileno(), 0, access=mmap.ACCESS_READ) as view:
                end = view.rfind(b"\n") + 1  # read from the end, not into memory
            if end == size:  # its last line whole
                return
            journal.truncate(end)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise storage_error("the sweep's Optuna journal could not be read or repaired", path, exc) from exc
    log.warning("the study journal %s ended in a line cut short (%d bytes, never counted by Optuna): removed", path,
                size - end)


def load_study(location: SweepLocation) -> optuna.Study | None:
    """The study of a sweep folder as its journal holds it now; None when it has none yet."""
    store = StudyStore(location.uri, location.endpoint_url)
    if (storage := store.storage(create=False)) is None:
        return None
    try:
        (summary,) = optuna.get_all_study_summaries(storage, include_best_trial=False)
    except ValueError:
        raise ConfigError("the journal does not hold exactly one study", file=store.journal_uri) from None
    return optuna.load_study(study_name=summary.study_name, storage=storage)


#: The digits of a batch's number in its object name (names sort as numbers).
DIGITS = 12
#: How many batches a read fetches at once (a resumed sweep reads its whole journal).
READERS = 16
#: S3's answers to a conditional PUT whose object another writer created first.
TAKEN = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})


class S3JournalBackend(BaseJournalBackend):
    """Optuna journal logs as numbered objects under ``s3://bucket/prefix/``."""

    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket, self.prefix, self.client = bucket, prefix.strip("/"), client
        self._batches: list[list[dict[str, Any]]] = []  # every batch read so far, in order

    def _answered(self, request: Callable[[], T], conflicts: frozenset[str] = frozenset()) -> T | None:
        return s3_call(request, f"s3://{self.bucket}/{self.prefix}", "the storage did not answer", conflicts)

    def _key(self, number: int) -> str:
        return f"{self.prefix}/{number:0{DIGITS}d}.jsonl"

    def _refresh(self) -> None:
        """Read the batches written since the last read (a gap ends it: that batch is being written)."""
        read = len(self._batches)
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}/", StartAfter=self._key(read - 1) if read else "")
        listed = enumerate(item["Key"] for page in pages for item in page.get("Contents", []))
        keys = [key for _, key in itertools.takewhile(lambda found: found[1] == self._key(read + found[0]), listed)]
        with ThreadPoolExecutor(max_workers=READERS) as pool:
            bodies = pool.map(lambda key: self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read(), keys)
            self._batches.extend([json.loads(line) for line in body.decode("utf-8").splitlines() if line]
                                 for body in bodies)

    def read_logs(self, log_number_from: int) -> list[dict[str, Any]]:
        self._answered(self._refresh)
        return [log for batch in self._batches for log in batch][log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        body = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode("utf-8")
        while True:  # another writer took this number: read its batch, take the next one
            self._answered(self._refresh)
            key = self._key(len(self._batches))
            put = functools.partial(self.client.put_object, Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*")
            if self._answered(put, TAKEN) is not None:
                return


def sweep_study_storage(sweep_dir: str, endpoint_url: str | None = None) -> tuple[optuna.storages.BaseStorage, str]:
    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    store = StudyStore(location.uri, location.endpoint_url)
    if (storage := store.storage(create=False)) is None:
        raise ConfigError("the sweep folder holds no Optuna study yet (no trial was suggested)", file=store.journal_uri)
    return storage, manifest.sweep_name


def dashboard_cookie(port: int) -> str:
    """The token's cookie name: one per port, since browsers keep cookies per host, not per port."""
    return f"sentsweep-dashboard-{port}"


#: requests that change nothing in optuna-dashboard's API
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def guarded(app: Any, port: int, token: str) -> Any:
    """``app`` answering only requests for ``127.0.0.1:port`` or ``localhost:port`` (no DNS rebinding) that carry
    ``token`` (in the query, which sets an HttpOnly, SameSite=Strict cookie, or in that cookie); a change must come
    from the dashboard's own page. optuna-dashboard has no authentication, and every local user reaches loopback."""
    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    origins = {f"http://{host}" for host in hosts}
    name = dashboard_cookie(port)

    def refuse(start_response: Any, why: str) -> list[bytes]:
        start_response("403 Forbidden", [("Content-Type", "text/plain; charset=utf-8")])
        return [f"{why}\n".encode()]

    def answer(environ: dict[str, Any], start_response: Any) -> Any:
        if environ.get("HTTP_HOST", "") not in hosts:
            return refuse(start_response, "this dashboard answers requests for 127.0.0.1 or localhost only")
        # sent from the dashboard's page: another loopback page gets this port's cookie too, but cannot forge these
        origin, fetch_site = environ.get("HTTP_ORIGIN"), environ.get("HTTP_SEC_FETCH_SITE")
        same_origin = (origin is None or origin in origins) and fetch_site in (None, "same-origin", "none")
        if environ.get("REQUEST_METHOD", "GET") not in SAFE_METHODS and not same_origin:
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


def dashboard_server(storage: optuna.storages.BaseStorage, host: str = "127.0.0.1",
                     port: int = 8080) -> tuple[Any, str]:
    """optuna-dashboard on ``storage`` behind :func:`guarded`, bound to ``host:port``, and the URL to open."""
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
    app = guarded(wsgi(storage), port, token)
    try:
        server = make_server(host, port, app, server_class=Server, handler_class=Quiet)
    except OSError as exc:  # the port is taken (or not this user's to bind)
        raise ConfigError(f"cannot serve on {host}:{port} ({exc.strerror or exc}): give a free port",
                          field="--port") from None
    return server, f"http://{host}:{port}/dashboard?token={token}"


def serve_dashboard(storage: optuna.storages.BaseStorage, host: str = "127.0.0.1", port: int = 8080,
                    on_ready: Callable[[str], None] = print) -> None:
    server, address = dashboard_server(storage, host, port)
    with server:
        on_ready(address)
        server.serve_forever()
