"""Unlabelled text as ordered documents: Wikipedia, Brown, PTB, or any one-sentence-a-line file.

File grammar (``titled-documents``): documents are separated by blank lines; a document may open with a
``# title`` line (``#`` then a space). Only the first line of a document can be a title, so a ``# ``
line inside an article (Wikipedia's numbered-list items) stays a sentence. A plain one-sentence-a-line
file with no blank lines is one untitled document; untitled documents are named after the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sentsweep.data.catalogue import TEXT_FORMATS
from sentsweep.data.prepared import is_prepared_ref, open_prepared
from sentsweep.data.records import Document
from sentsweep.data.registry import REGISTRY, locate
from sentsweep.data.source import DataSource, resolve_data_dir
from sentsweep.data.streams import DocumentStart, document_title, stream_documents, stream_one_document
from sentsweep.data.textio import read_lines
from sentsweep.errors import DataError


def parse_documents(lines: Sequence[str], default_title: str) -> list[Document]:
    """Split lines into documents (see the module docstring); sentences are stripped of surrounding space.

    Untitled documents are called ``default_title`` when the file holds one document, otherwise
    ``default_title:N`` with N the document's 1-based position.
    """
    parts: list[tuple[str | None, list[str]]] = []
    for item in stream_documents(lines):
        if isinstance(item, DocumentStart):
            parts.append((item.title, []))
        else:
            parts[-1][1].append(item)
    return [
        Document(title=document_title(title, default_title, n, len(parts)), sentences=tuple(sentences))
        for n, (title, sentences) in enumerate(parts, start=1)
    ]


def read_documents(path: Path) -> list[Document]:
    """A ``titled-documents`` file (``# Title`` headers, blank-line separated) or a plain text file."""
    return parse_documents(read_lines(path), default_title=path.stem)


def read_one_document(path: Path, title: str) -> Document:
    """The whole file as one document, one sentence a line (blank lines skipped; no title lines)."""
    sentences = (item for item in stream_one_document(read_lines(path)) if isinstance(item, str))
    return Document(title=title, sentences=tuple(sentences))


def corpus(name_or_path: str | Path, data_dir: str | Path | DataSource | None = None,
           file_format: str = "documents") -> list[Document]:
    """A corpus as documents in reading order.

    Registered names: ``enwiki`` (one document per article), ``brown`` (one per Brown file, titled
    ``fileid category``), ``ptb-train``/``ptb-valid``/``ptb-test`` (one document each). Anything else
    is a path to a text file: absolute, relative to the working directory, or relative to the data
    directory. ``prepared:NAME`` (or ``prepared:URI``) is a corpus staged by ``sentsweep data prepare``
    (e.g. ``prepared:wiki1m``): memory-mapped, its sentences read on demand (:mod:`sentsweep.data.prepared`).
    A text file is read in ``file_format``: ``documents`` (the titled-documents grammar, :mod:`.streams`: a line
    opening a document with ``# `` is its title) or ``lines`` (one document, every non-blank line a sentence, so a
    sentence that starts with ``# `` stays a sentence).
    """
    if file_format not in TEXT_FORMATS:
        raise ValueError(f"file_format must be {' or '.join(TEXT_FORMATS)}, got '{file_format}'")
    if isinstance(name_or_path, str) and is_prepared_ref(name_or_path):
        return open_prepared(name_or_path, "corpus").documents()
    if isinstance(name_or_path, str) and name_or_path in REGISTRY:
        info, (path,) = locate(name_or_path, "corpus", None, data_dir)
        if info.format == "one-document":
            return [read_one_document(path, title=info.name)]
        return read_documents(path)
    path = _corpus_file(Path(name_or_path).expanduser(), data_dir)
    return [read_one_document(path, title=path.stem)] if file_format == "lines" else read_documents(path)


def training_documents(names: str, data_dir: str | Path | DataSource | None = None,
                       max_sentences: int | None = None) -> list[Document]:
    """The documents a trial trains on: the corpora ``names`` (joined by commas) in reading order, cut after their
    first ``max_sentences`` sentences, empty documents left out. A parse cache is keyed by these documents, so
    ``sentsweep parse`` builds them the same way to fill a trial's cache."""
    documents = [doc for name in (n.strip() for n in names.split(",") if n.strip())
                 for doc in corpus(name, data_dir=data_dir)]
    if max_sentences is not None:
        kept, left = [], max_sentences
        for doc in documents:
            if left <= 0:
                break
            kept.append(Document(doc.title, doc.sentences[:left]))
            left -= len(kept[-1].sentences)
        documents = kept
    return [d for d in documents if d.sentences]


def _corpus_file(path: Path, data_dir: str | Path | DataSource | None) -> Path:
    if path.is_file():
        return path
    if not path.is_absolute():
        under_root = resolve_data_dir(data_dir).path(path)
        if under_root.is_file():
            return under_root
    known = ", ".join(info.name for info in REGISTRY.values() if info.kind == "corpus")
    raise DataError(f"neither a registered corpus ({known}) nor an existing file", file=path)
