"""``sentsweep dashboard SWEEP``: optuna-dashboard on the sweep's journal, live while it runs, on loopback only and
answering the user who started it alone (:func:`guarded`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna

from sentsweep.errors import ConfigError


def sweep_study_storage(sweep_dir: str, endpoint_url: str | None = None) -> tuple[optuna.storages.BaseStorage, str]:
    from sentsweep.platform.config import resolve_sweep_folder
    from sentsweep.platform.location import locate
    from sentsweep.platform.search.study_store import StudyStore

    location = locate(*resolve_sweep_folder(sweep_dir, endpoint_url))
    manifest = location.read_manifest()
    store = StudyStore(location.uri, location.endpoint_url)
    storage = store.storage(create=False)
    if storage is None:
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
    import hmac
    import http.cookies
    from urllib.parse import parse_qs

    hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
    origins = {f"http://{host}" for host in hosts}
    name = dashboard_cookie(port)

    def same_origin(environ: dict[str, Any]) -> bool:
        """Whether a browser sent the request from the dashboard's page: another loopback page gets this port's
        cookie too, but cannot forge ``Origin`` or ``Sec-Fetch-Site``."""
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


def dashboard_server(storage: optuna.storages.BaseStorage, host: str = "127.0.0.1",
                     port: int = 8080) -> tuple[Any, str]:
    """optuna-dashboard on ``storage`` behind :func:`guarded`, bound to ``host:port``, and the URL to open."""
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
    app = guarded(wsgi(storage), port, token)
    server = make_server(host, port, app, server_class=Server, handler_class=Quiet)
    return server, f"http://{host}:{port}/dashboard?token={token}"


def serve_dashboard(storage: optuna.storages.BaseStorage, host: str = "127.0.0.1", port: int = 8080,
                    on_ready: Callable[[str], None] = print) -> None:
    server, address = dashboard_server(storage, host, port)
    with server:
        on_ready(address)
        server.serve_forever()
