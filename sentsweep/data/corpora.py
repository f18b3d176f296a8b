"""Unlabelled text as ordered documents: Wikipedia, Brown, PTB, or any one-sentence-a-line file.

File grammar (``titled-documents``): documents are separated by blank lines; a document may open with a
``# title`` line (``#`` then a space). Only the first line of a document can be a title, so a ``# ``
line inside an article (Wikipedia's numbered-list items) stays a sentence. A plain one-sentence-a-line
file with no blank lines is one untitled document; untitled documents are named after the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sentsweep.data.records import Document
from sentsweep.data.registry import REGISTRY, locate
from sentsweep.data.source import DataSource, resolve_data_dir
from sentsweep.data.textio import read_lines
from sentsweep.errors import DataError

_TITLE = "# "


def parse_documents(lines: Sequence[str], default_title: str) -> list[Document]:
    """Split lines into documents (see the module docstring); sentences are stripped of surrounding space.

    Untitled documents are called ``default_title`` when the file holds one document, otherwise
    ``default_title:N`` with N the document's 1-based position.
    """
    parts: list[tuple[str | None, list[str]]] = []
    current: tuple[str | None, list[str]] | None = None
    for line in lines:
        text = line.strip()
        if not text:
            current = None
            continue
        if current is None:
            title = text[len(_TITLE) :].strip() if line.startswith(_TITLE) else None
            current = (title, [] if title is not None else [text])
            parts.append(current)
        else:
            current[1].append(text)
    return [
        Document(
            title=title
            if title is not None
            else default_title
            if len(parts) == 1
            else f"{default_title}:{n}",
            sentences=tuple(sentences),
        )
        for n, (title, sentences) in enumerate(parts, start=1)
    ]


def read_documents(path: Path) -> list[Document]:
    """A ``titled-documents`` file (``# Title`` headers, blank-line separated) or a plain text file."""
    return parse_documents(read_lines(path), default_title=path.stem)


def read_one_document(path: Path, title: str) -> Document:
    """The whole file as one document, one sentence a line (blank lines skipped; no title lines)."""
    return Document(title=title, sentences=tuple(text for line in read_lines(path) if (text := line.strip())))


def corpus(name_or_path: str | Path, data_dir: str | Path | DataSource | None = None) -> list[Document]:
    """A corpus as documents in reading order.

    Registered names: ``enwiki`` (one document per article), ``brown`` (one per Brown file, titled
    ``fileid category``), ``ptb-train``/``ptb-valid``/``ptb-test`` (one document each). Anything else
    is a path to a text file (e.g. SimCSE's ``wiki1m_for_simcse.txt``): absolute, relative to the
    working directory, or relative to the data directory.
    """
    if isinstance(name_or_path, str) and name_or_path in REGISTRY:
        info, (path,) = locate(name_or_path, "corpus", None, data_dir)
        if info.format == "one-document":
            return [read_one_document(path, title=info.name)]
        return read_documents(path)
    return read_documents(_corpus_file(Path(name_or_path).expanduser(), data_dir))


def _corpus_file(path: Path, data_dir: str | Path | DataSource | None) -> Path:
    if path.is_file():
        return path
    if not path.is_absolute():
        under_root = resolve_data_dir(data_dir).path(path)
        if under_root.is_file():
            return under_root
    known = ", ".join(info.name for info in REGISTRY.values() if info.kind == "corpus")
    raise DataError(f"neither a registered corpus ({known}) nor an existing file", file=path)
