"""``sentsweep data prepare``: stage a dataset once, from the hub or local files, where every trial reads it.

The source files are found (:func:`source_files`: the hub through :func:`sentsweep.data.hub.hub_files`,
or ``--from PATH``), streamed (:mod:`sentsweep.data.streams`) into the column writers of
:mod:`sentsweep.data.prepared` in a work folder, and published with their manifest
(:func:`sentsweep.data.staging.publish`). Nothing holds the whole dataset in memory: a 1M-sentence corpus
costs the writer a few MB (``bench/data_prepare.py`` measures it).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sentsweep.data.catalogue import (
    CATALOGUE,
    FORMAT_KINDS,
    FORMATS,
    TEXT_FORMATS,
    CustomSource,
    HubSource,
    Preparable,
    custom_entry,
)
from sentsweep.data.hub import hub_files
from sentsweep.data.prepared import WRITERS, manifest_for
from sentsweep.data.scored_files import ScoreRange, stream_scored_pairs
from sentsweep.data.staging import Store, dataset_store, default_root, publish, read_manifest, store_at, work_folder
from sentsweep.data.streams import stream_glove, stream_nli_pairs, stream_parquet_text, stream_text_file
from sentsweep.errors import DataError

#: Rows between two progress lines.
PROGRESS_EVERY = 1_000_000


@dataclass(frozen=True)
class PrepareResult:
    """What ``prepare`` did: the dataset's manifest, where it is, and whether it was already there."""

    manifest: dict[str, Any]
    uri: str
    reused: bool
    seconds: float

    def summary(self) -> str:
        m = self.manifest
        verb = "already prepared" if self.reused else f"prepared in {self.seconds:.1f} s"
        return (f"{m['name']}: {m['kind']}, {m['rows']:,} rows, {m['bytes']:,} bytes, {verb} at {self.uri} "
                f"(digest {m['digest'][:12]})")


def source_files(source: HubSource, from_path: Path | None, *, hub_cache: str | Path | None = None,
                 revision: str | None = None) -> list[Path]:
    """The files of ``source``: under ``from_path`` when given (the file itself, or the repository's
    patterns under a folder), else from the hub (cache first; downloads when online)."""
    if from_path is None:
        if source.repo_id == "local":
            raise DataError("a local dataset needs --from PATH")
        return hub_files(source.repo_id, source.patterns, repo_type=source.repo_type,
                         revision=revision or source.revision, cache_dir=hub_cache)
    path = from_path.expanduser()
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataError("--from: no such file or folder", file=path)
    found = sorted({p for pattern in source.patterns for p in path.glob(pattern) if p.is_file()})
    if not found:
        raise DataError(f"--from: no file matching {', '.join(source.patterns)} under the folder", file=path)
    return found


def stream(source: HubSource, files: list[Path]) -> Iterator[Any]:
    """The rows of ``files`` read as ``source.format`` says (corpus items, pairs or vector rows)."""
    columns = source.columns or {}
    if source.format in TEXT_FORMATS:
        for path in files:
            yield from stream_text_file(path, source.format)
    elif source.format == "parquet-text":
        yield from stream_parquet_text(files, columns["text"])
    elif source.format == "parquet-nli":
        yield from stream_nli_pairs(files, columns)
    elif source.format == "glove":
        for path in files:
            yield from stream_glove(path, source.member)
    elif FORMAT_KINDS.get(source.format) == "scored-pairs":
        assert source.score_range is not None  # custom_entry refuses scored pairs without a range
        yield from stream_scored_pairs(files, source.format, columns, ScoreRange(*source.score_range))
    else:
        raise DataError(f"unknown source format {source.format!r}; formats: {', '.join(FORMATS)}")


def resolve_entry(name: str, from_path: Path | None, custom: CustomSource | None, fmt: str | None) -> Preparable:
    """The catalogue entry ``name`` (``fmt`` overriding its format, for a local file in another layout), or
    for a name outside the catalogue the dataset ``custom`` describes (local files or a hub repository)."""
    if name not in CATALOGUE:
        if custom is None:
            raise DataError(f"{name!r} is not in the catalogue ({', '.join(CATALOGUE)}): a dataset of your own needs "
                            "--from PATH (or --hub REPO) and --kind")
        return custom_entry(name, replace(custom, format=fmt or custom.format), from_path)
    entry = CATALOGUE[name]
    if custom is not None and custom.kind != entry.kind:
        raise DataError(f"{name} is {entry.kind} data, not {custom.kind}")
    if custom is not None and custom != CustomSource(entry.kind):
        raise DataError(f"{name} is in the catalogue, which says where it comes from: choose another name for "
                        "a dataset of your own")
    if fmt is None:
        return entry
    if FORMAT_KINDS.get(fmt, entry.kind) != entry.kind:
        raise DataError(f"--format {fmt} makes {FORMAT_KINDS[fmt]} data; {name} is {entry.kind} data")
    if len(entry.sources) != 1:
        raise DataError(f"{name}: --format applies to one-source datasets only")
    return replace(entry, sources=(replace(entry.sources[0], format=fmt),))


def prepare(
    name: str,
    *,
    to: str | None = None,
    from_path: str | Path | None = None,
    kind: str | None = None,
    fmt: str | None = None,
    custom: CustomSource | None = None,
    hub_cache: str | Path | None = None,
    revision: str | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> PrepareResult:
    """Stage dataset ``name`` under ``to`` (default: ``SENTSWEEP_PREPARED``, else ``<cache>/prepared``).

    An existing complete copy is kept unless ``force``. ``from_path`` reads local files instead of the
    hub. A dataset outside the catalogue is described by ``custom`` (or by ``kind`` alone, with ``fmt``): its
    kind, a hub repository, the columns to read and the range of its scores. A source that fails (a bad row)
    leaves nothing behind: no work folder, and no root folder that this call made.
    """
    start = time.perf_counter()
    local = Path(from_path) if from_path is not None else None
    if custom is None and kind is not None:
        custom = CustomSource(kind)
    entry = resolve_entry(name, local, custom, fmt)
    store = dataset_store(name, to)
    existing = read_manifest(store)
    if existing is not None and not force:
        return PrepareResult(existing, store.uri, True, time.perf_counter() - start)
    made = _first_missing(Path(store.path).parent) if store.is_local else None
    work = work_folder(store)
    try:
        manifest = _write(entry, local, work, hub_cache=hub_cache, revision=revision, log=log)
        publish(work, manifest, store)
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise
    finally:
        if work.exists():
            shutil.rmtree(work)
    return PrepareResult(manifest, store.uri, False, time.perf_counter() - start)


def _first_missing(folder: Path) -> Path | None:
    """The outermost folder on the way to ``folder`` that does not exist yet (None when ``folder`` exists)."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            break
        missing = path
    return missing


def _write(entry: Preparable, local: Path | None, work: Path, *, hub_cache: str | Path | None,
           revision: str | None, log: Callable[[str], None]) -> dict[str, Any]:
    writer = WRITERS[entry.kind](work)
    sources = []
    for source in entry.sources:
        files = source_files(source, local, hub_cache=hub_cache, revision=revision)
        log(f"{entry.name}: reading {', '.join(p.name for p in files[:3])}{' ...' if len(files) > 3 else ''}")
        for item in stream(source, files):
            writer.add(item)
            if writer.rows and writer.rows % PROGRESS_EVERY == 0:
                log(f"{entry.name}: {writer.rows:,} rows")
        sources.append({"repo_id": None if local else source.repo_id, "revision": revision or source.revision,
                        "files": [str(p) for p in files], "format": source.format})
    extra = writer.close()
    if writer.rows == 0:
        raise DataError(f"{entry.name}: the source gave no rows")
    ranges = {s.score_range for s in entry.sources if s.score_range is not None}
    if ranges:
        (score_range,) = ranges
        extra["score_range"] = list(score_range)
    return manifest_for(work, entry.name, entry.kind, writer.rows,
                        {**extra, "description": entry.description, "licence": entry.licence},
                        {"sources": sources})


def staged_elsewhere(root: str | None = None) -> list[tuple[Store, dict[str, Any]]]:
    """The prepared datasets under ``root`` that are not in the catalogue (your own), by name."""
    import pyarrow.fs

    base = store_at(root or default_root())
    listing = base.fs.get_file_info(pyarrow.fs.FileSelector(base.path, allow_not_found=True))
    names = sorted(info.base_name for info in listing if info.type == pyarrow.fs.FileType.Directory
                   and not info.base_name.startswith(".") and info.base_name not in CATALOGUE)
    found = [staged(name, root) for name in names]
    return [(store, manifest) for store, manifest in found if manifest is not None]


def staged(name: str, root: str | None = None) -> tuple[Store, dict[str, Any] | None]:
    """Where ``name`` would be staged under ``root`` and its manifest (None when not prepared there)."""
    store = dataset_store(name, root)
    return store, read_manifest(store)
