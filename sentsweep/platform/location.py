"""Sweep folders: Tune's experiment folder (local or S3/MinIO) and the manifest that resumes it. A read that fails
other than "not found" is tried again, then a :class:`~sentsweep.errors.StorageError`, never "absent" (which would
start a count, a search or a sweep afresh over the one stored)."""

from __future__ import annotations

import getpass
import json
import logging
import os
import posixpath
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from sentsweep.credentials import mask_uri
from sentsweep.data.cache import atomic_write
from sentsweep.errors import ConfigError, StorageError, validation_message
from sentsweep.platform.config import SWEEP_NAME, SweepConfig, is_shared_folder

MANIFEST = "sentsweep_sweep.json"
CONFIG_COPY = "sweep.yaml"
#: How many times a sweep-folder read is tried when the storage fails, and the first pause (doubled each time).
READ_ATTEMPTS = 3
READ_BACKOFF_S = 0.5
#: How the pause between tries is waited (a test puts a recorder here, so that no test waits).
pause: Callable[[float], None] = time.sleep

#: Who a sweep's manifest names as its owner (``sentsweep submit`` sets it); else the login name.
OWNER_ENV = "SENTSWEEP_OWNER"

log = logging.getLogger(__name__)


def sweep_owner(environ: Mapping[str, str] | None = None) -> str:
    """``$SENTSWEEP_OWNER``, else the login name (``$USER``, ``$LOGNAME``, the password database), else unknown."""
    environ = os.environ if environ is None else environ
    found = [value for name in (OWNER_ENV, "USER", "LOGNAME") if (value := environ.get(name, "").strip())]
    if found:
        return found[0]
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid without an entry (containers)
        return "unknown"


class SweepManifest(BaseModel):
    """What a sweep folder must hold for ``resume``."""

    model_config = ConfigDict(extra="ignore")

    sweep_name: str
    config: dict[str, Any]
    parent_run_id: str
    experiment_id: str
    tracking_uri: str
    created: float
    owner: str | None = None  # who started it; stamped by write_manifest
    #: SHA-256 of the files each ranking metric reads, as the data resolved when the sweep began (None: not kept)
    data_sha256: dict[str, str] | None = None

    @field_validator("sweep_name")
    @classmethod
    def _a_folder_name(cls, value: str) -> str:
        """A name, never a path: a manifest planted in a shared bucket must not point folders elsewhere."""
        if not SWEEP_NAME.fullmatch(value):
            raise ValueError(f"{value!r} is not a sweep name (letters, digits, '.', '_', '-'; a letter or digit first)")
        return value

    def sweep_config(self, file: str | None = None) -> SweepConfig:
        """The stored config, a field added since taking the value the sweep ran with (:data:`SINCE_ADDED`)."""
        try:
            return SweepConfig.model_validate({**SINCE_ADDED, **self.config})
        except ValidationError as exc:
            message, field = validation_message(exc)
            raise ConfigError(f"the sweep's stored config is invalid ({message})",
                              field=f"config.{field}" if field else "config", file=file) from None


#: Sweep settings added after sweeps were stored without them, with the behaviour those sweeps had.
SINCE_ADDED: dict[str, Any] = {"tpe_gamma": "optuna"}


def write_whole(fs: pyarrow.fs.FileSystem, folder: str, filename: str, data: bytes) -> None:
    """Write ``filename`` in ``folder`` whole or not at all: locally a temp file renamed over it; on S3 one PUT."""
    if isinstance(fs, pyarrow.fs.LocalFileSystem):
        with atomic_write(Path(folder) / filename) as out:
            out.write(data)
        return
    fs.create_dir(folder, recursive=True)
    with fs.open_output_stream(posixpath.join(folder, filename)) as out:
        out.write(data)


@dataclass(frozen=True)
class SweepLocation:
    """A sweep folder as Ray wants it: ``storage_path`` + ``name`` on ``filesystem``."""

    storage_path: str  # what RunConfig.storage_path gets (prefix-stripped when filesystem is custom)
    name: str
    filesystem: pyarrow.fs.FileSystem | None
    uri: str  # how users name the folder (a local path or s3://bucket/...)
    endpoint_url: str | None = None  # the S3-compatible endpoint of ``filesystem``, if any

    @property
    def fs_path(self) -> str:
        return posixpath.join(self.storage_path, self.name)

    @property
    def tune_path(self) -> str:
        """The folder as Ray Tune's restore and analysis take it, with ``filesystem`` beside it."""
        return self.uri if self.filesystem is None else self.fs_path

    def resolve(self) -> tuple[pyarrow.fs.FileSystem, str]:
        """The folder's file system and its path there."""
        if self.filesystem is not None:
            return self.filesystem, self.fs_path
        return pyarrow.fs.FileSystem.from_uri(self.uri)

    def file_uri(self, filename: str) -> str:
        return posixpath.join(self.uri, filename)

    def write_text(self, filename: str, text: str) -> None:
        write_whole(*self.resolve(), filename, text.encode("utf-8"))

    def read_bytes(self, filename: str) -> bytes:
        fs, path = self.resolve()
        with fs.open_input_stream(posixpath.join(path, filename)) as stream:
            return stream.readall()

    def read_optional(self, filename: str) -> bytes | None:
        """``filename``'s bytes; None when it is absent. A failing storage is tried again, then a StorageError."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                return self.read_bytes(filename)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if attempt == READ_ATTEMPTS:
                    raise StorageError(f"the storage did not answer after {READ_ATTEMPTS} tries ({type(exc).__name__}: "
                                       f"{' '.join(str(exc).split())}); nothing was changed: try again once it "
                                       "answers", file=self.file_uri(filename)) from exc
                log.warning("reading %s failed (%s); trying again", self.file_uri(filename), exc)
                pause(READ_BACKOFF_S * 2 ** (attempt - 1))

    def read_json_object(self, filename: str, what: str) -> dict[str, Any] | None:
        """``filename`` as a JSON object, None when it does not exist; ``what`` it holds names it in an error."""
        if (raw := self.read_optional(filename)) is None:
            return None
        try:
            found = json.loads(raw)
            if not isinstance(found, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            raise ConfigError(f"unreadable {filename} ({exc}); it holds {what}", file=self.file_uri(filename)) from None
        return found

    def list(self, suffix: str = "") -> list[str]:
        fs, path = self.resolve()
        infos = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
        return sorted(i.base_name for i in infos if i.base_name.endswith(suffix))

    def write_manifest(self, manifest: SweepManifest, config: SweepConfig) -> None:
        if manifest.owner is None:
            manifest = manifest.model_copy(update={"owner": sweep_owner()})
        self.write_text(MANIFEST, manifest.model_dump_json(indent=2))
        self.write_text(CONFIG_COPY, config.to_yaml())

    def read_manifest(self) -> SweepManifest:
        """The folder's manifest; a :class:`ConfigError` when it has none or an unreadable one."""
        if (raw := self.read_optional(MANIFEST)) is None:
            raise ConfigError(f"not a sentsweep sweep folder (no {MANIFEST})", file=self.uri)
        try:
            return SweepManifest.model_validate_json(raw)
        except ValidationError as exc:
            message, field = validation_message(exc)
            raise ConfigError(f"unreadable sweep manifest ({field + ': ' if field else ''}{message})",
                              file=self.file_uri(MANIFEST)) from None


def locate(uri: str, endpoint_url: str | None = None) -> SweepLocation:
    """The :class:`SweepLocation` of a sweep folder ``uri``; on a custom S3 endpoint (MinIO: ``http://minio:9000``)
    Ray gets the prefix-stripped path with an S3 filesystem there, as its storage docs prescribe."""
    uri = uri.rstrip("/")
    if "://" not in uri:
        path = Path(uri).expanduser().resolve()
        return SweepLocation(str(path.parent), path.name, None, str(path))
    parsed = urlparse(uri)
    name = posixpath.basename(parsed.path)
    if endpoint_url:
        if parsed.scheme != "s3":
            raise ConfigError("a storage endpoint needs an s3:// path", field="storage_endpoint_url")
        endpoint = urlparse(endpoint_url)
        if not endpoint.scheme or not endpoint.netloc:
            raise ConfigError(f"'{endpoint_url}' is not a URL like http://host:port", field="storage_endpoint_url")
        fs = pyarrow.fs.S3FileSystem(endpoint_override=endpoint.netloc, scheme=endpoint.scheme,
                                     allow_bucket_creation=True)
        return SweepLocation(posixpath.dirname(f"{parsed.netloc}{parsed.path}"), name, fs, uri, endpoint_url)
    return SweepLocation(uri.rsplit("/", 1)[0], name, None, uri)


def new_sweep_location(config: SweepConfig, now: float | None = None, suffix: str | None = None) -> SweepLocation:
    """A fresh folder for a sweep: ``<storage_path>/<name>-<YYYYmmdd-HHMMSS>[-<suffix>]``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    root = config.storage_path.rstrip("/")
    name = f"{config.name}-{stamp}" + (f"-{suffix}" if suffix else "")
    return locate(f"{root}/{name}", config.storage_endpoint_url)


def folder_command(command: str, sweep_dir: str, tracking_uri: str | None = None) -> str:
    """``sentsweep COMMAND SWEEP_DIR`` as a user can paste it: a shared folder's command names its tracking server,
    which such a folder is not trusted to name."""
    line = f"sentsweep {command} {shlex.quote(sweep_dir)}"
    if tracking_uri and is_shared_folder(sweep_dir):
        line += f" --tracking-uri {shlex.quote(mask_uri(tracking_uri))}"
    return line
