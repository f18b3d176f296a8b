"""The parser: spaCy tokens and dependencies plus a constituency backend, with in-memory and disk caches.

Every sentence becomes a :class:`~sentsweep.data.parsing.spans.ParsedSentence`. Single sentences are
cached in a SQLite :class:`~sentsweep.data.parsing.store.TreeStore` under
``sentsweep.config.cache_dir()/trees/<backend id>``; the backend id carries the spaCy model and version,
the constituency backend and :data:`~sentsweep.data.parsing.spans.PARSING_VERSION`, so a change of any
re-parses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sentsweep.data.parsing.backends import ConstituencyBackend, check_backend_name, doc_heads, make_backend
from sentsweep.data.parsing.spans import EMPTY_TOKEN, PARSING_VERSION, ParsedSentence, Span, laminar
from sentsweep.data.parsing.store import TreeStore
from sentsweep.data.spacy_models import load_spacy, resolve_spacy_model

ProgressFn = Callable[[int, int], None]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", name)


class Parser:
    """spaCy tokens and dependencies plus a constituency backend, with in-memory and disk caches.

    ``trees=False`` only tokenizes (the ``bow`` and ``seq`` views need no tree); it is fast and not cached.
    ``cache``: True for ``sentsweep.config.cache_dir()``, a folder, or False for no disk cache. The spaCy
    pipeline and the constituency backend load on first use.
    """

    def __init__(
        self,
        constituency: str = "derived",
        spacy_model: str | None = None,
        *,
        trees: bool = True,
        cache: bool | str | Path = True,
        batch_size: int = 256,
    ) -> None:
        check_backend_name(constituency)
        self.constituency = constituency
        self.spacy_model = resolve_spacy_model(spacy_model)[0]
        self.trees = trees
        self.batch_size = batch_size
        self._cache_setting = cache
        self._nlp: Any = None
        self._backend: ConstituencyBackend | None = None
        self._store: TreeStore | None = None
        self._memo: dict[str, ParsedSentence] = {}

    # -- resources ---------------------------------------------------------------------------------
    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            self._nlp = load_spacy(self.spacy_model, "parser" if self.trees else "tokenizer")
        return self._nlp

    @property
    def backend(self) -> ConstituencyBackend:
        if self._backend is None:
            self._backend = make_backend(self.constituency)
        return self._backend

    @property
    def backend_id(self) -> str:
        """spaCy model and version, constituency backend and version, parsing-format version."""
        version = self.nlp.meta.get("version", "?")
        if not self.trees:
            return f"{self.spacy_model}-{version}/tokens/v{PARSING_VERSION}"
        return f"{self.spacy_model}-{version}/{self.backend.name}-{self.backend.version}/v{PARSING_VERSION}"

    @property
    def cache_root(self) -> Path | None:
        """The folder of this backend's cached parses (None without a disk cache)."""
        if self._cache_setting is False:
            return None
        if self._cache_setting is True:
            from sentsweep.config import cache_dir

            base = cache_dir()
        else:
            base = Path(self._cache_setting).expanduser()
        return base / "trees" / _safe(self.backend_id)

    @property
    def store(self) -> TreeStore | None:
        if self._store is None and self.trees and self.cache_root is not None:
            self._store = TreeStore(self.cache_root / "sentences.sqlite")
        return self._store

    def __getstate__(self) -> dict[str, Any]:  # spaCy pipelines and backends reload after pickling
        state = self.__dict__.copy()
        state.update(_nlp=None, _backend=None, _store=None, _memo={})
        return state

    # -- parsing -----------------------------------------------------------------------------------
    def parse(self, sentences: Sequence[str], progress: ProgressFn | None = None) -> list[ParsedSentence]:
        """Parse ``sentences`` (one sentence per string), using and filling the caches."""
        todo = [s for s in dict.fromkeys(sentences) if s not in self._memo]
        if todo and self.store is not None:
            self._memo.update(self.store.get_many(todo))
            todo = [s for s in todo if s not in self._memo]
        if todo:
            fresh: dict[str, ParsedSentence] = {}
            total = len(todo)
            for start in range(0, total, self.batch_size * 8):
                chunk = todo[start : start + self.batch_size * 8]
                fresh.update(zip(chunk, self._parse_texts(chunk), strict=True))
                if progress is not None:
                    progress(min(total, start + len(chunk)), total)
            if self.store is not None:
                self.store.put_many(fresh)
            self._memo.update(fresh)
        elif progress is not None:
            progress(len(sentences), len(sentences))
        return [self._memo[s] for s in sentences]

    def parse_words(self, sentences: Sequence[Sequence[str]]) -> list[ParsedSentence]:
        """Parse pre-tokenized sentences (kept as given; not cached), e.g. a treebank's words."""
        from spacy.tokens import Doc

        docs = [Doc(self.nlp.vocab, words=list(words)) for words in sentences]
        if not self.trees:
            return [self._to_parsed(doc, None) for doc in docs]
        return self._with_spans(list(self.nlp.pipe(docs, batch_size=self.batch_size)))

    def _parse_texts(self, texts: Sequence[str]) -> list[ParsedSentence]:
        texts = [" ".join(t.split()) for t in texts]  # no whitespace tokens, the same in both modes
        if not self.trees:
            return [self._to_parsed(doc, None) for doc in self.nlp.tokenizer.pipe(texts, batch_size=1000)]
        return self._with_spans(list(self.nlp.pipe(texts, batch_size=self.batch_size)))

    def _with_spans(self, docs: list[Any]) -> list[ParsedSentence]:
        spans = self.backend.spans(docs)
        return [self._to_parsed(doc, s) for doc, s in zip(docs, spans, strict=True)]

    @staticmethod
    def _to_parsed(doc: Any, spans: list[Span] | None) -> ParsedSentence:
        tokens = tuple(t.text for t in doc)
        if spans is None:
            return ParsedSentence(tokens or (EMPTY_TOKEN,))
        if not tokens:
            return ParsedSentence((EMPTY_TOKEN,), (-1,), ())
        return ParsedSentence(tokens, tuple(doc_heads(doc)), tuple(laminar(spans, len(tokens))))
