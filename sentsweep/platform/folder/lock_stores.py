"""Where a sweep's lock lives: one object changed by compare-and-set on its version; a failed condition returns
None, any other storage failure is a :class:`~sentsweep.errors.StorageError`."""

from __future__ import annotations

import fcntl
import hashlib
import posixpath
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from sentsweep.data.cache import atomic_write
from sentsweep.errors import ConfigError
from sentsweep.platform.s3 import s3_call, s3_client, storage_error

if TYPE_CHECKING:
    from sentsweep.platform.location import SweepLocation

LOCK_FILE = "driver.lock"
#: S3's answers to a conditional write whose condition failed (or that races another conditional write).
S3_CONFLICTS = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "412", "409"})


@dataclass(frozen=True)
class Stored:
    data: bytes
    version: str


class LockStore(Protocol):
    """One object with compare-and-set writes."""

    uri: str  # how messages name the object

    def read(self) -> Stored | None:
        """The object and its version; None when there is none."""

    def write(self, data: bytes, version: str | None) -> str | None:
        """Write ``data`` if the object is still ``version`` (None: absent); its new version, None if it changed."""


#: What a lock store's :class:`~sentsweep.errors.StorageError` says failed.
FAILED = "the sweep's lock could not be read or written"
#: ``flock`` excludes per open file, but NFS turns it into a per-process lock: threads of one process take this first.
_THREADS = threading.Lock()


class LocalLockStore:
    """The lock as a local (or NFS) file, compared and renamed over under an exclusive ``flock`` on a guard file
    (dropped when its process dies). The version is the SHA-256."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.uri = str(path)

    def read(self) -> Stored | None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise storage_error(FAILED, self.uri, exc) from exc
        return Stored(data, hashlib.sha256(data).hexdigest())

    def write(self, data: bytes, version: str | None) -> str | None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _THREADS, self.path.with_name(f"{self.path.name}.guard").open("ab") as guard:
                fcntl.flock(guard, fcntl.LOCK_EX)  # closing the guard drops it
                current = self.read()
                if (current.version if current is not None else None) != version:
                    return None
                with atomic_write(self.path) as out:
                    out.write(data)
        except OSError as exc:
            raise storage_error(FAILED, self.uri, exc) from exc
        return hashlib.sha256(data).hexdigest()


class S3LockStore:
    """The lock as an S3 object: ``If-None-Match: *`` creates, ``If-Match: <ETag>`` replaces. Short timeouts and
    two tries, so a renewal in an outage returns long before the lock could expire."""

    def __init__(self, bucket: str, key: str, endpoint_url: str | None) -> None:
        self.bucket = bucket
        self.key = key
        self.uri = f"s3://{bucket}/{key}"
        self.client = s3_client(endpoint_url, "prompt")

    def read(self) -> Stored | None:
        def get() -> Stored:
            answer = self.client.get_object(Bucket=self.bucket, Key=self.key)
            return Stored(answer["Body"].read(), answer["ETag"])

        return s3_call(get, self.uri, FAILED, {"NoSuchKey", "404"})

    def write(self, data: bytes, version: str | None) -> str | None:
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        return s3_call(lambda: self.client.put_object(Bucket=self.bucket, Key=self.key, Body=data,
                                                      ContentType="application/json", **condition)["ETag"],
                       self.uri, FAILED, S3_CONFLICTS)


def lock_store(location: SweepLocation) -> LockStore:
    parts = urlsplit(location.uri)
    if parts.scheme == "s3":
        return S3LockStore(parts.hostname or "", posixpath.join(parts.path.strip("/"), LOCK_FILE),
                           location.endpoint_url)
    if "://" not in location.uri or parts.scheme == "file":
        _, path = location.resolve()
        return LocalLockStore(Path(path) / LOCK_FILE)
    raise ConfigError(f"'{parts.scheme}://' sweep folders are not supported (their driver lock needs a local folder "
                      "or s3://)", field="storage_path")
