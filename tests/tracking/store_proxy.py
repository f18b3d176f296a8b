"""A proxy on a free loopback port in front of a real ``mlflow server``, which plays what fails behind that server
while the server itself stays up: its ``/health`` always answers 200 (as MLflow's does, without touching any store),
and every other request is forwarded, or answered as :attr:`StoreProxy.mode` says."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import threading
from collections.abc import Iterator
from typing import Literal
from urllib.parse import urlsplit

#: ``forward``: everything goes to the server; ``store-down``: every call but ``/health`` gets the 503 MLflow answers
#: when its PostgreSQL is down; ``artifacts-down``: only artifact transfers get a 500 (MinIO down behind
#: ``--serve-artifacts``).
Mode = Literal["forward", "store-down", "artifacts-down"]

STORE_DOWN = json.dumps({"error_code": "TEMPORARILY_UNAVAILABLE", "message": (
    '(sqlalchemy.exc.OperationalError) (psycopg2.OperationalError) connection to server at "postgres" (10.0.0.7), '
    "port 5432 failed: Connection refused")}).encode()
ARTIFACTS_DOWN = json.dumps({"error_code": "INTERNAL_ERROR", "message": (
    "Could not connect to the endpoint URL: http://minio:9000/mlflow-artifacts")}).encode()
GATEWAY_LOST = b"upstream connect error or disconnect/reset before headers"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length", "host"})


class StoreProxy:
    """The proxy's URL (:attr:`uri`), its :attr:`mode` (set by the test at any time) and the paths it was asked for
    (:attr:`heard`, ``/health`` left out)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urlsplit(upstream)
        self.mode: Mode = "forward"
        self.heard: list[str] = []
        self.uri = ""
        #: Paths (without the query) whose next request is forwarded but whose answer is lost: the client gets the
        #: 503 of a gateway instead, and MLflow's client sends the request again (a POST included).
        self.lose_answer: list[str] = []

    def answer(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        if handler.path.split("?")[0].rstrip("/") == "/health":
            self._send(handler, 200, b"OK", "text/plain")
            return
        self.heard.append(handler.path)
        if self.mode == "store-down":
            self._send(handler, 503, STORE_DOWN)
        elif self.mode == "artifacts-down" and "/mlflow-artifacts/" in handler.path:
            self._send(handler, 500, ARTIFACTS_DOWN)
        elif handler.path.split("?")[0] in self.lose_answer:
            self.lose_answer.remove(handler.path.split("?")[0])
            self._forward(handler, body, lose=True)
        else:
            self._forward(handler, body)

    def _forward(self, handler: http.server.BaseHTTPRequestHandler, body: bytes, *, lose: bool = False) -> None:
        connection = http.client.HTTPConnection(self.upstream.hostname or "127.0.0.1", self.upstream.port, timeout=60)
        try:
            headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
            connection.request(handler.command, handler.path, body=body or None, headers=headers)
            response = connection.getresponse()
            if lose:  # the server did the work; its answer never reaches the client
                response.read()
                self._send(handler, 503, GATEWAY_LOST, "text/plain")
                return
            self._send(handler, response.status, response.read(), response.getheader("Content-Type"))
        finally:
            connection.close()

    @staticmethod
    def _send(handler: http.server.BaseHTTPRequestHandler, status: int, body: bytes,
              content_type: str | None = "application/json") -> None:
        handler.send_response(status)
        if content_type:
            handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


@contextlib.contextmanager
def store_proxy(upstream: str) -> Iterator[StoreProxy]:
    """A :class:`StoreProxy` in front of the server at ``upstream``, listening until the block ends."""
    proxy = StoreProxy(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            proxy.answer(self)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815 - the handler's names in http.server

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    proxy.uri = f"http://127.0.0.1:{server.server_port}"
    threading.Thread(target=server.serve_forever, name="store-proxy", daemon=True).start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
