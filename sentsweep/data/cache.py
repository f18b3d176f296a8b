"""The one disk-cache utility: content hashes, an inter-process file lock and atomic writes.

Every derived artefact sentsweep caches under :func:`sentsweep.config.cache_dir` (a corpus's negations,
a corpus's parses, converted word vectors) goes through :func:`get_or_build`:

1. the file is read without the lock (a file at ``path`` is always complete, see 3);
2. on a miss the lock beside the file is taken (concurrent trials wait there: one builds, the others
   then find its file) and the file is read again;
3. still missing or unreadable: the value is built and written to a temporary file in the same folder,
   which is renamed over ``path`` (:func:`atomic_write`): a reader sees no file or a whole one, never
   a half-written one, and a writer that dies leaves no file at ``path``.

>>> content_hash(["a\\n", "b\\n"]) == content_hash(["a\\nb\\n"])
True
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")

__all__ = ["atomic_write", "content_hash", "file_lock", "get_or_build", "lock_path"]


def content_hash(chunks: Iterable[str | bytes], algorithm: str = "sha256") -> str:
    """Hex digest of ``chunks`` fed in order (strings as UTF-8): the content part of a cache key.

    The chunks are concatenated, so the caller chooses the separators that make two contents differ.
    """
    digest = hashlib.new(algorithm)
    for chunk in chunks:
        digest.update(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
    return digest.hexdigest()


def lock_path(path: Path) -> Path:
    """The lock file that guards ``path``: ``<name>.lock`` beside it."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock (``flock``) on the lock file beside ``path``; blocks until held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path(path), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def atomic_write(path: Path) -> Iterator[IO[bytes]]:
    """A binary handle whose content replaces ``path`` in one rename when the block ends without error.

    The bytes go to a temporary file in ``path``'s folder (the same file system, so ``os.replace`` is
    atomic), flushed to disk before the rename; on an exception the temporary file is removed and
    ``path`` is left as it was.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def get_or_build(
    path: Path,
    *,
    read: Callable[[Path], T | None],
    build: Callable[[], T],
    write: Callable[[T, IO[bytes]], None],
) -> tuple[T, bool]:
    """The value cached at ``path`` and whether it was a hit; on a miss, built once across processes.

    ``read(path)`` returns the value, or None when the file is missing, stale or unreadable (it is then
    rebuilt and overwritten); ``build()`` computes the value; ``write(value, handle)`` serialises it to
    the binary handle of :func:`atomic_write`. See the module docstring for the protocol.
    """
    if path.is_file():
        value = read(path)
        if value is not None:
            return value, True
    with file_lock(path):
        if path.is_file():  # another process may have built it while this one waited for the lock
            value = read(path)
            if value is not None:
                return value, True
        value = build()
        with atomic_write(path) as handle:
            write(value, handle)
    return value, False
