"""A TCP proxy on a free loopback port that a test can cut: every connection through it is closed at once
(:meth:`TcpProxy.cut`), and while it is ``refusing`` a new connection is closed as soon as it is accepted. It plays a
dropped ``kubectl port-forward`` or a restarting Ray head in front of a real server, websockets included.

    with tcp_proxy(8265) as proxy:    # clients use proxy.port
        proxy.refusing = True
        proxy.cut()
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from tools.harness.processes import LOOPBACK


class TcpProxy:
    """Connections to :attr:`port` go on to ``upstream_port`` on loopback."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.refusing = False
        self._listener = socket.create_server((LOOPBACK, 0))
        self.port = int(self._listener.getsockname()[1])
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            if self.refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection((LOOPBACK, self.upstream_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Close every connection through the proxy now, as a lost port-forward does."""
        with self._lock:
            opened, self._open = self._open, []
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._listener.close()
        self.cut()


@contextlib.contextmanager
def tcp_proxy(upstream_port: int) -> Iterator[TcpProxy]:
    """A :class:`TcpProxy` in front of ``upstream_port``, closed on exit (also when the test fails)."""
    proxy = TcpProxy(upstream_port)
    try:
        yield proxy
    finally:
        proxy.close()
