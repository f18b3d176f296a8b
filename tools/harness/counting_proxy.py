"""A counting reverse proxy on loopback: every HTTP request a client sends to a server (an MLflow tracking server)
goes through it, is forwarded as is, and is recorded with its method, path, status and the seconds the server
took to answer it (from the request sent upstream to the last byte of the answer read), so a benchmark counts the
real requests at the server's front door and their latency, without touching the server or the clients.

    with counting_proxy("http://127.0.0.1:5000") as proxy:   # clients use proxy.uri
        ...
    proxy.requests()        # [Request(method, path, status, seconds, started), ...]

Threads, one per client connection (HTTP/1.1 keep-alive, as ``requests`` does), each with its own keep-alive
connection upstream. A chunked request body is forwarded with a ``Content-Length``.
"""

from __future__ import annotations

import contextlib
import http.client
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tools.harness.processes import LOOPBACK

#: Headers of one connection (RFC 9110, 7.6.1): not forwarded.
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                        "transfer-encoding", "upgrade", "proxy-connection"})


@dataclass(frozen=True)
class Request:
    """One forwarded request: ``seconds`` the server took (send to last byte); ``started``: epoch seconds."""

    method: str
    path: str
    status: int
    seconds: float
    started: float


class CountingProxy:
    """The running proxy (:func:`counting_proxy`); :meth:`requests` and :meth:`clear` are thread-safe."""

    def __init__(self, upstream: str, server: ThreadingHTTPServer) -> None:
        self.upstream = upstream
        self._server = server
        self._lock = threading.Lock()
        self._requests: list[Request] = []

    @property
    def uri(self) -> str:
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    def requests(self, since: float = 0.0) -> list[Request]:
        """The requests recorded so far (those started at or after ``since``, epoch seconds)."""
        with self._lock:
            return [r for r in self._requests if r.started >= since]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # sixteen trials and a driver connecting at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a trial's process ending with its keep-alive connection open) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _handler(proxy: CountingProxy) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(proxy.upstream)
    host, port = target.hostname or LOOPBACK, target.port or 80

    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        upstream: http.client.HTTPConnection | None = None

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return None

        def _body(self) -> bytes | None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(chunks)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else None

        def _forward(self) -> None:
            body = self._body()
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"}
            headers["Host"] = f"{host}:{port}"
            if body is not None:
                headers["Content-Length"] = str(len(body))
            started, begin = time.time(), time.perf_counter()
            for attempt in (1, 2):  # a keep-alive connection the server closed meanwhile: once more on a new one
                if self.upstream is None:
                    self.upstream = http.client.HTTPConnection(host, port, timeout=600)
                try:
                    self.upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = self.upstream.getresponse()
                    data = answer.read()
                    break
                except (http.client.HTTPException, ConnectionError):
                    self.upstream.close()
                    self.upstream = None
                    if attempt == 2:
                        proxy.record(Request(self.command, self.path.split("?")[0], 502,
                                             time.perf_counter() - begin, started))
                        self.send_error(502, "upstream did not answer")
                        return
            proxy.record(Request(self.command, self.path.split("?")[0], answer.status, time.perf_counter() - begin,
                                 started))
            self.send_response_only(answer.status, answer.reason)
            for key, value in answer.getheaders():
                if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _forward  # noqa: N815 - http.server's names

        def finish(self) -> None:
            super().finish()
            if self.upstream is not None:
                self.upstream.close()

    return Forward


@contextlib.contextmanager
def counting_proxy(upstream: str) -> Iterator[CountingProxy]:
    """A proxy to ``upstream`` (``http://host:port``) on a free loopback port, serving in a daemon thread until
    the block ends."""
    server = _Server((LOOPBACK, 0), BaseHTTPRequestHandler)
    proxy = CountingProxy(upstream.rstrip("/"), server)
    server.RequestHandlerClass = _handler(proxy)
    thread = threading.Thread(target=server.serve_forever, name="counting-proxy", daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
