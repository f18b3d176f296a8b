"""Where prepared datasets live: a folder or an S3 prefix, reached only through :mod:`pyarrow.fs`.

A prepared dataset is a folder ``<root>/<name>/`` of plain files (see :mod:`sentsweep.data.prepared`)
whose ``manifest.json`` is written last: a folder without it is incomplete and never read. The root is,
in order: an explicit ``--to`` / URI, ``SENTSWEEP_PREPARED``, else ``<cache>/prepared``
(``$SENTSWEEP_CACHE`` or ``~/.cache/sentsweep``). An S3 root is a URI that pyarrow understands, e.g.
``s3://sentsweep/prepared`` with credentials from the usual ``AWS_*`` variables, or for MinIO
``s3://sentsweep/prepared?endpoint_override=minio:9000&scheme=http``.

Readers memory-map files, which needs a local file system: a dataset on S3 is copied once per machine
into ``<cache>/prepared-staged/<digest>/`` under a file lock (concurrent trials on a node wait, then all
map the same copy, which the page cache shares between them); nothing is fetched from the hub here.

Whoever can write the bucket can write a manifest, so nothing in one is taken on trust: the copy's folder is named
by the manifest's digest only once that is a SHA-256 over the listed files, only the listed files are copied (each
name a plain file name), and each must match its SHA-256 before the copy is moved into place. A manifest naming
``../`` or an absolute path, or a file changed since it was prepared, is refused (one line naming the store) and
nothing lands outside ``<cache>/prepared-staged/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs

from sentsweep.config import cache_dir, prepared_root_from_env
from sentsweep.data.cache import file_lock
from sentsweep.errors import DataError

MANIFEST = "manifest.json"
#: a prepared dataset's file: a plain name in its folder (no separator, no leading dot)
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def default_root() -> str:
    """``SENTSWEEP_PREPARED`` when set, else ``<cache>/prepared``."""
    return prepared_root_from_env() or str(cache_dir() / "prepared")


@dataclass(frozen=True)
class Store:
    """One dataset folder: ``path`` on ``fs``, named ``uri`` for people."""

    fs: pyarrow.fs.FileSystem
    path: str
    uri: str

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pyarrow.fs.LocalFileSystem)

    def file(self, name: str) -> str:
        return posixpath.join(self.path, name)


def store_at(uri: str) -> Store:
    """The store of ``uri``: an ``s3://`` (or any pyarrow) URI, else a local path."""
    if "://" not in uri:
        path = str(Path(uri).expanduser().resolve())
        return Store(pyarrow.fs.LocalFileSystem(), path, path)
    try:
        fs, path = pyarrow.fs.FileSystem.from_uri(uri)
    except (pyarrow.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot open storage {uri!r}: {exc}") from None
    return Store(fs, path.rstrip("/"), uri)


def dataset_store(name: str, root: str | None = None) -> Store:
    """The folder of dataset ``name`` under ``root`` (default: :func:`default_root`); a name that is not one plain
    folder name (``..``, ``a/b``, ``.hidden``) is a :class:`DataError`: publishing replaces the folder it names."""
    if not FILE_NAME.fullmatch(name):
        raise DataError(f"{name!r} is not a dataset's name: letters, digits, '.', '_' and '-', a letter or digit "
                        "first (it names one folder under the storage root)")
    base = store_at(root or default_root())
    uri = base.uri.split("?", 1)
    joined = uri[0].rstrip("/") + "/" + name + (f"?{uri[1]}" if len(uri) == 2 else "")
    return Store(base.fs, posixpath.join(base.path, name), joined)


def read_manifest(store: Store) -> dict[str, Any] | None:
    """The dataset's manifest, or None when the folder holds none (not prepared, or incomplete)."""
    try:
        with store.fs.open_input_stream(store.file(MANIFEST)) as stream:
            manifest = json.loads(stream.readall())
    except FileNotFoundError:
        return None
    except OSError as exc:
        if "not found" in str(exc).lower() or "does not exist" in str(exc).lower():
            return None
        raise DataError(f"cannot read {store.uri}/{MANIFEST}: {exc}") from None
    except ValueError as exc:
        raise DataError(f"{store.uri}/{MANIFEST} is not JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise DataError(f"{store.uri}/{MANIFEST} is not a JSON object")
    return manifest


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def files_digest(files: dict[str, dict[str, Any]]) -> str:
    """The digest of a dataset: SHA-256 over its files' ``name sha256`` lines, in name order."""
    listing = "\n".join(f"{name} {files[name]['sha256']}" for name in sorted(files))
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def listed_files(store: Store, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifest's files, checked: plain file names, a SHA-256 and a size each, and a ``digest`` that is the
    digest of that listing; a DataError naming the store otherwise."""
    where = f"{store.uri}/{MANIFEST}"
    files, digest = manifest.get("files"), manifest.get("digest")
    if not isinstance(files, dict) or not files:
        raise DataError(f"{where}: 'files' lists no files")
    for name, entry in files.items():
        if not FILE_NAME.fullmatch(name) or name == MANIFEST:
            raise DataError(f"{where}: {name!r} in 'files' is not a plain file name")
        if (not isinstance(entry, dict) or not SHA256_HEX.fullmatch(str(entry.get("sha256")))
                or not isinstance(entry.get("bytes"), int)):
            raise DataError(f"{where}: 'files'.{name} needs 'bytes' and a hex 'sha256'")
    if not isinstance(digest, str) or digest != files_digest(files):
        raise DataError(f"{where}: 'digest' is not the digest of its 'files'")
    return files


def _copy_checked(store: Store, name: str, entry: dict[str, Any], target: Path) -> None:
    """Copy one listed file, refused unless its bytes match the manifest's SHA-256."""
    digest = hashlib.sha256()
    with store.fs.open_input_stream(store.file(name)) as source, target.open("wb") as out:
        while chunk := source.read(1 << 22):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != entry["sha256"]:
        raise DataError(f"{store.uri}/{name} does not match its SHA-256 in {MANIFEST} (changed since it was "
                        "prepared?): prepare the dataset again with --force")


def publish(folder: Path, manifest: dict[str, Any], store: Store) -> None:
    """Put the files of ``folder`` and then ``manifest`` at ``store`` (replacing what was there).

    Local: ``folder`` is renamed into place (it must be on the same file system, see :func:`work_folder`).
    Elsewhere: the files are uploaded, the manifest last.
    """
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    if store.is_local:
        (folder / MANIFEST).write_text(text)
        target = Path(store.path)
        if target.exists():
            shutil.rmtree(target)
        os.replace(folder, target)
        return
    with contextlib.suppress(FileNotFoundError):
        store.fs.delete_file(store.file(MANIFEST))
    store.fs.create_dir(store.path, recursive=True)
    pyarrow.fs.copy_files(str(folder), store.path, source_filesystem=pyarrow.fs.LocalFileSystem(),
                          destination_filesystem=store.fs)
    with store.fs.open_output_stream(store.file(MANIFEST)) as out:
        out.write(text.encode("utf-8"))
    shutil.rmtree(folder)


def work_folder(store: Store) -> Path:
    """An empty folder to write a dataset into before :func:`publish`: beside a local target (so the final
    rename is atomic), else under the cache."""
    if store.is_local:
        parent = Path(store.path).parent
        work = parent / f".{Path(store.path).name}.preparing-{os.getpid()}"
    else:
        work = cache_dir() / "prepared-work" / f"{hashlib.sha1(store.uri.encode()).hexdigest()[:16]}-{os.getpid()}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    return work


def local_folder(store: Store, manifest: dict[str, Any]) -> Path:
    """A local folder holding the dataset, to memory-map: the folder itself when local, else a copy made
    once per machine under ``<cache>/prepared-staged/<digest>/`` of the listed files, each checked against its
    SHA-256 before the copy is moved into place (see the module's doc)."""
    if store.is_local:
        return Path(store.path)
    files = listed_files(store, manifest)
    target = cache_dir() / "prepared-staged" / manifest["digest"]
    marker = target / MANIFEST
    if marker.is_file():
        return target
    with file_lock(target):
        if marker.is_file():  # another trial on this machine copied it while this one waited
            return target
        partial = target.with_name(target.name + ".partial")
        if partial.exists():
            shutil.rmtree(partial)
        partial.mkdir(parents=True)
        try:
            for name, entry in files.items():
                _copy_checked(store, name, entry, partial / name)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        os.replace(partial, target)
    return target
