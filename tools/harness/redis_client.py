"""A minimal Redis client (RESP2 over a socket) for the tests' throwaway Redis (:mod:`tools.harness.gcs_redis`):
enough for AUTH, SCAN, ACL LOG and the commands a test sends, with no client library to install."""

from __future__ import annotations

import socket
from typing import Any

from tools.harness.processes import LOOPBACK


class RedisReplyError(Exception):
    """An error reply (``NOPERM ...``, ``WRONGPASS ...``)."""


class RedisConnection:
    """One connection; each call sends a command and returns its reply (:class:`RedisReplyError` on an error)."""

    def __init__(self, port: int, *, timeout: float = 10.0) -> None:
        self._sock = socket.create_connection((LOOPBACK, port), timeout=timeout)
        self._buffer = b""

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> RedisConnection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __call__(self, *args: str | bytes | int) -> Any:
        words = [a if isinstance(a, bytes) else str(a).encode() for a in args]
        self._sock.sendall(b"".join([b"*%d\r\n" % len(words)] + [b"$%d\r\n%s\r\n" % (len(w), w) for w in words]))
        reply = self._reply()
        if isinstance(reply, RedisReplyError):
            raise reply
        return reply

    def _fill(self, size: int) -> None:
        while len(self._buffer) < size:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise ConnectionError("Redis closed the connection")
            self._buffer += chunk

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            self._fill(len(self._buffer) + 1)
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line

    def _reply(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisReplyError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            self._fill(size + 2)
            data, self._buffer = self._buffer[:size], self._buffer[size + 2:]
            return data
        if kind == b"*":
            size = int(rest)
            return None if size < 0 else [self._reply() for _ in range(size)]
        raise ValueError(f"not a RESP reply: {line!r}")
