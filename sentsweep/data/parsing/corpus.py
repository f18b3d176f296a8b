"""Whole corpora parsed and cached in one file keyed by the corpus content hash and the backend id."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sentsweep.data.cache import content_hash, get_or_build
from sentsweep.data.parsing.parser import Parser, ProgressFn
from sentsweep.data.parsing.spans import ParsedSentence, binarize, binary_levels, dependency_levels
from sentsweep.data.records import Document

#: What the corpus cache file holds: the titles, the parsed documents and the backend id.
_Blob = tuple[list[str], list[list[ParsedSentence]], str]

@dataclass
class ParsedCorpus:
    """A corpus's documents as parsed sentences, in reading order, and the backend that parsed it."""

    titles: list[str]
    documents: list[list[ParsedSentence]]
    backend_id: str
    path: Path | None = None
    seconds: float = 0.0
    from_cache: bool = False

    def sentences(self) -> Iterator[ParsedSentence]:
        for doc in self.documents:
            yield from doc

    def __len__(self) -> int:
        return sum(len(d) for d in self.documents)


def corpus_hash(documents: Sequence[Document]) -> str:
    """SHA-256 of the documents' titles and sentences (the corpus part of the cache key)."""
    return content_hash(_corpus_chunks(documents))


def _corpus_chunks(documents: Sequence[Document]) -> Iterator[str]:
    for doc in documents:
        yield doc.title + "\x00"
        for sentence in doc.sentences:
            yield sentence + "\n"
        yield "\x01"


def parse_corpus(
    documents: Sequence[Document], parser: Parser, progress: ProgressFn | None = None
) -> ParsedCorpus:
    """Parse every sentence of ``documents``; the result is cached by corpus hash and backend id.

    The cache file is filled under :func:`sentsweep.data.cache.get_or_build`: concurrent trials parse a
    corpus once, and a half-written file is never read.
    """
    start = time.perf_counter()
    titles = [doc.title for doc in documents]

    def build() -> list[list[ParsedSentence]]:
        parsed = parser.parse([s for doc in documents for s in doc.sentences], progress=progress)
        docs, pos = [], 0
        for doc in documents:
            docs.append(parsed[pos : pos + len(doc.sentences)])
            pos += len(doc.sentences)
        return docs

    root = parser.cache_root if parser.trees else None
    if root is None:
        return ParsedCorpus(titles, build(), parser.backend_id, None, time.perf_counter() - start, False)
    path = root / f"corpus-{corpus_hash(documents)[:20]}.json.gz"
    (titles, docs, backend), hit = get_or_build(
        path,
        read=_read_corpus,
        build=lambda: (titles, build(), parser.backend_id),
        write=_write_corpus,
    )
    return ParsedCorpus(titles, docs, backend, path, time.perf_counter() - start, hit)


def _read_corpus(path: Path) -> _Blob | None:
    try:
        blob = json.loads(gzip.decompress(path.read_bytes()))
        docs = [[ParsedSentence.from_json(row) for row in d] for d in blob["documents"]]
        return blob["titles"], docs, blob["backend"]
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


def _write_corpus(value: _Blob, handle: IO[bytes]) -> None:
    titles, docs, backend = value
    blob = {"backend": backend, "titles": titles, "documents": [[p.to_json() for p in d] for d in docs]}
    handle.write(gzip.compress(json.dumps(blob, separators=(",", ":")).encode("utf-8"), 6))


def corpus_stats(corpus: ParsedCorpus) -> dict[str, float]:
    """Documents, sentences, tokens and tree heights (levels = height + 1, the batched steps needed)."""
    sentences = list(corpus.sentences())
    lengths = [len(s.tokens) for s in sentences]
    stats: dict[str, float] = {
        "documents": float(len(corpus.documents)),
        "sentences": float(len(sentences)),
        "tokens": float(sum(lengths)),
        "tokens_mean": sum(lengths) / max(1, len(lengths)),
        "tokens_max": float(max(lengths, default=0)),
    }
    if sentences and all(s.has_trees for s in sentences):
        dep = [max(dependency_levels(s.heads)) + 1 for s in sentences]
        const = [max(binary_levels(binarize(s.spans, len(s.tokens)))) + 1 for s in sentences]
        constituents = [len(s.spans) for s in sentences]
        stats.update(
            {
                "dep_levels_mean": sum(dep) / len(dep),
                "dep_levels_max": float(max(dep)),
                "const_levels_mean": sum(const) / len(const),
                "const_levels_max": float(max(const)),
                "constituents_mean": sum(constituents) / len(constituents),
            }
        )
    return stats
