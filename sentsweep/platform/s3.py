"""The one place an S3 client is built for a sweep folder on ``s3://``, and its failures turned into one line."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar

from sentsweep.errors import ConfigError, StorageError

T = TypeVar("T")
#: Seconds to connect and to answer, and attempts per request, by how long the caller may wait.
#: ``"prompt"`` suits a lock renewal, which must return long before the lock expires.
PATIENCE: dict[str, tuple[int, int, int]] = {"prompt": (5, 10, 2), "patient": (10, 30, 4)}


def s3_client(endpoint_url: str | None, patience: str = "patient") -> Any:
    """A boto3 S3 client on ``endpoint_url`` (AWS when None), with the timeouts and retries of ``patience``."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise ConfigError("a sweep folder on s3:// needs boto3: pip install boto3", field="storage_path") from None
    connect, read, attempts = PATIENCE[patience]
    config = Config(connect_timeout=connect, read_timeout=read,
                    retries={"max_attempts": attempts, "mode": "standard"},
                    s3={"addressing_style": "path"} if endpoint_url else None)
    return boto3.client("s3", endpoint_url=endpoint_url, config=config)


def storage_error(what: str, uri: str, exc: BaseException) -> StorageError:
    return StorageError(f"{what} ({type(exc).__name__}: {' '.join(str(exc).split())})", file=uri)


def s3_call(request: Callable[[], T], uri: str, what: str, conflicts: Collection[str] = ()) -> T | None:
    """``request()``'s answer; None for an S3 error code in ``conflicts``, a :class:`StorageError` for others."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return request()
    except (ClientError, BotoCoreError) as exc:
        if isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") in conflicts:
            return None
        raise storage_error(what, uri, exc) from exc
