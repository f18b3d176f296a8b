"""An HTTP server on a free loopback port that records every request's path and answers 500: the host a planted
manifest names, to check that nothing (and so no login) reaches it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def capturing_server() -> Iterator[tuple[str, list[str]]]:
    """Its URL and the list of the paths it was asked for (any method); stopped at the end, also on failure."""
    heard: list[str] = []

    class Capture(http.server.BaseHTTPRequestHandler):
        def _record(self) -> None:
            heard.append(self.path)
            self.send_response(500)
            self.end_headers()

        do_GET = do_POST = do_PATCH = do_DELETE = _record  # noqa: N815 - the handler's names in http.server

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", heard
    finally:
        server.shutdown()
        server.server_close()
