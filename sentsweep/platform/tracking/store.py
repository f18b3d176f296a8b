"""Checks and set-up of the tracking store that a sweep needs before any trial starts."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sentsweep.data.cache import file_lock
from sentsweep.errors import ConfigError
from sentsweep.platform.tracking.reachability import probe

if TYPE_CHECKING:
    from mlflow import MlflowClient

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def sqlite_path(uri: str) -> Path | None:
    return Path(uri.removeprefix("sqlite:///")).expanduser() if uri.startswith("sqlite:///") else None


def prepare_store(uri: str) -> None:
    """Create a sqlite tracking file's schema under a file lock, so that two sweeps started at once on a fresh
    file do not both run MLflow's migrations."""
    if (path := sqlite_path(uri)) is not None:
        from mlflow import MlflowClient

        with file_lock(path):
            MlflowClient(tracking_uri=uri).search_experiments(max_results=1)  # creates and migrates the schema


def is_remote_address(address: str | None) -> bool:
    """Whether ``--address`` names a Ray cluster on another machine (``ray://host:port`` or ``host:port``)."""
    if not address or address in ("local", "auto"):
        return False
    host = urlsplit(address if "://" in address else f"ray://{address}").hostname
    return host is not None and host not in LOOPBACK_HOSTS


def refuse_sqlite_on_cluster(uri: str, address: str | None = None) -> None:
    """:class:`ConfigError` when ``uri`` is a sqlite file and ``address`` names a Ray cluster on another machine.
    Only the driver writes to MLflow, so a local Ray of several nodes shares the driver's file. A remote address
    puts the driver's Tune run, or the driver itself, on another machine, where the file is not."""
    if sqlite_path(uri) is not None and is_remote_address(address):
        raise ConfigError(f"a sqlite tracking store ({uri}) cannot be shared with a Ray cluster at {address}; run "
                          "`mlflow server` and pass its http:// URI", field="tracking.uri")


#: The tracking store's credential variables (MLflow's, and libpq's password of a ``postgresql://`` store): the
#: driver's alone, hidden from a local Ray's processes as they start.
TRACKING_CREDENTIAL_ENV = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
                           "MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_CLIENT_CERT_PATH", "PGPASSWORD")


@contextlib.contextmanager
def hidden_from_workers(also: Collection[str] = ()) -> Iterator[None]:
    """The tracking credentials (and the variables ``also`` names) out of this process's environment for the block:
    the processes a local Ray starts in it inherit none of them."""
    kept = {name: os.environ.pop(name) for name in (*TRACKING_CREDENTIAL_ENV, *also) if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(kept)


def open_client(uri: str) -> MlflowClient:
    """A client on an existing tracking store: a missing sqlite file is an error, not a new database, and so is a
    server whose store does not answer now (each call would wait out MLflow's retries)."""
    from mlflow import MlflowClient

    from sentsweep.credentials import mask_uri

    if (path := sqlite_path(uri)) is not None and not path.is_file():
        raise ConfigError(f"no MLflow database at {path} (run a sweep first, or pass --tracking-uri)",
                          field="--tracking-uri")
    if (reason := probe(uri)[1]) is not None:
        raise ConfigError(f"MLflow server {mask_uri(uri)} does not answer ({reason}); start it and run this again "
                          "(nothing was done)")
    return MlflowClient(tracking_uri=uri)
