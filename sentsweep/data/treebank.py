"""Bracketed constituency trees: a small reader, span extraction and unlabelled bracket F1.

Reads Penn Treebank ``.mrg`` files (and any ``(LABEL child ...)`` string, such as a parser's output)
without nltk. Used to measure how close the offline, dependency-derived constituency backend of
:mod:`sentsweep.data.parsing` comes to gold trees (:mod:`sentsweep.data.parsing.scoring`), and to turn
a real parser's output into spans.

Scoring follows evalb's conventions with labels ignored: empty elements (``-NONE-``) and the constituents
left empty by their removal are deleted; punctuation leaves (evalb's deleted labels) are removed before
spans are counted; brackets are compared as sets of ``(start, end)`` word spans over at least two words
(single-word brackets and unary chains add nothing). The whole-sentence bracket is counted like evalb does
(``with_root=True``) or left out, which removes the bracket every tree trivially gets right.

>>> tree = read_bracketed("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))")[0]
>>> tree.words(), sorted(tree.spans())
(['The', 'cat', 'sat', '.'], [(0, 2), (0, 4)])
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sentsweep.errors import DataError

#: Preterminal labels evalb deletes (punctuation) before scoring; ``-NONE-`` marks empty elements.
PUNCT_TAGS = frozenset({",", ":", "``", "''", ".", "-LRB-", "-RRB-", "#", "$"})
EMPTY_TAG = "-NONE-"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
#: Brackets as the PTB writes them (so that a bracket word cannot break a bracketed tree).
_PTB_ESCAPE = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}
#: PTB escapes and quotes -> the characters a tokenizer such as spaCy's produces.
_PTB_UNESCAPE = {**{v: k for k, v in _PTB_ESCAPE.items()}, "``": '"', "''": '"'}


def ptb_escape(word: str) -> str:
    """A word as PTB-trained parsers expect it: brackets escaped (so their output stays readable)."""
    return _PTB_ESCAPE.get(word, word).replace("(", "-LRB-").replace(")", "-RRB-")


def ptb_unescape(word: str) -> str:
    """A gold PTB word as the tokenizer would write it (``-LRB-`` -> ``(``, PTB quotes -> ``"``)."""
    return _PTB_UNESCAPE.get(word, word)


@dataclass
class Tree:
    """A constituency tree node: ``label`` and ``children`` (Trees); a preterminal has one ``word``."""

    label: str
    children: list[Tree] = field(default_factory=list)
    word: str | None = None

    @property
    def is_preterminal(self) -> bool:
        return self.word is not None

    def preterminals(self) -> list[Tree]:
        """The (tag, word) nodes left to right."""
        if self.is_preterminal:
            return [self]
        return [p for child in self.children for p in child.preterminals()]

    def words(self) -> list[str]:
        return [str(p.word) for p in self.preterminals()]

    def tags(self) -> list[str]:
        return [p.label for p in self.preterminals()]

    def spans(self, with_root: bool = True) -> set[tuple[int, int]]:
        """Unlabelled constituent spans ``(start, end)`` (end exclusive) over >= 2 words."""
        out: set[tuple[int, int]] = set()

        def walk(node: Tree, start: int) -> int:
            if node.is_preterminal:
                return start + 1
            end = start
            for child in node.children:
                end = walk(child, end)
            if end - start >= 2:
                out.add((start, end))
            return end

        n = walk(self, 0)
        if not with_root:
            out.discard((0, n))
        return out

    def prune(self, drop_tags: Iterable[str]) -> Tree | None:
        """A copy without the preterminals whose tag is in ``drop_tags`` (and constituents left empty)."""
        drop = set(drop_tags)
        if self.is_preterminal:
            return None if self.label in drop else Tree(self.label, [], self.word)
        kept = [c for c in (child.prune(drop) for child in self.children) if c is not None]
        return Tree(self.label, kept) if kept else None

    def to_string(self) -> str:
        if self.is_preterminal:
            return f"({self.label} {self.word})"
        return f"({self.label} {' '.join(c.to_string() for c in self.children)})"


def read_bracketed(text: str, source: str | Path = "<string>") -> list[Tree]:
    """Every top-level tree in ``text``; PTB's unlabelled outer bracket ``( (S ...) )`` becomes ``ROOT``.

    A leaf may also appear bare, without a preterminal (``(NP the cat)``); it then gets the tag ``X``.
    Unbalanced brackets raise :class:`DataError` naming ``source``.
    """
    tokens = _TOKEN.findall(text)
    trees: list[Tree] = []
    pos = 0

    def parse(i: int) -> tuple[Tree, int]:
        # tokens[i] == "("
        i += 1
        if i >= len(tokens):
            raise DataError("unbalanced brackets: input ends inside a tree", file=source)
        label = "ROOT"
        if tokens[i] not in ("(", ")"):
            label = tokens[i]
            i += 1
        children: list[Tree] = []
        while i < len(tokens) and tokens[i] != ")":
            if tokens[i] == "(":
                child, i = parse(i)
                children.append(child)
            else:
                children.append(Tree("X", [], tokens[i]))
                i += 1
        if i >= len(tokens):
            raise DataError("unbalanced brackets: a tree is not closed", file=source)
        i += 1  # the ")"
        bare_leaf = len(children) == 1 and children[0].label == "X" and children[0].is_preterminal
        if bare_leaf and label != "ROOT":
            return Tree(label, [], children[0].word), i
        return Tree(label, children), i

    while pos < len(tokens):
        if tokens[pos] != "(":
            raise DataError(f"unexpected token {tokens[pos]!r} outside a tree", file=source)
        tree, pos = parse(pos)
        trees.append(tree)
    return trees


def read_treebank(path: str | Path, limit: int | None = None) -> list[Tree]:
    """The trees of a ``.mrg`` file or of every ``*.mrg`` file in a folder (sorted by name); the first
    ``limit`` when given (later files are then not read)."""
    path = Path(path)
    files = sorted(path.glob("*.mrg")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise DataError("no .mrg treebank file found", file=path)
    trees: list[Tree] = []
    for f in files:
        if limit is not None and len(trees) >= limit:
            break
        trees.extend(read_bracketed(f.read_text(encoding="utf-8"), f))
    return trees if limit is None else trees[:limit]


def gold_for_scoring(tree: Tree) -> Tree | None:
    """The gold tree without empty elements (``-NONE-``), as parsers see the sentence."""
    return tree.prune({EMPTY_TAG})


@dataclass(frozen=True)
class BracketScore:
    """Corpus-level (micro-averaged) unlabelled bracket precision, recall and F1 (x100)."""

    precision: float
    recall: float
    f1: float
    sentences: int
    gold_brackets: int
    predicted_brackets: int
    matched: int

    def as_dict(self) -> dict[str, float]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "sentences": float(self.sentences),
            "gold_brackets": float(self.gold_brackets),
            "predicted_brackets": float(self.predicted_brackets),
        }


def _keep_map(tags: Sequence[str]) -> list[int]:
    """Old word position -> new position after deleting punctuation (-1 for deleted words)."""
    out, n = [], 0
    for tag in tags:
        if tag in PUNCT_TAGS:
            out.append(-1)
        else:
            out.append(n)
            n += 1
    return out


def remap_spans(
    spans: Iterable[tuple[int, int]], keep: Sequence[int], with_root: bool = True
) -> set[tuple[int, int]]:
    """Spans over all words -> spans over the kept words (>= 2 of them); ``keep`` from :func:`_keep_map`."""
    kept_positions = [k for k in keep if k >= 0]
    total = len(kept_positions)
    out: set[tuple[int, int]] = set()
    for start, end in spans:
        inside = [k for k in keep[start:end] if k >= 0]
        if len(inside) >= 2:
            out.add((inside[0], inside[-1] + 1))
    if not with_root:
        out.discard((0, total))
    return out


def bracket_f1(
    gold: Sequence[Tree],
    predicted: Sequence[Iterable[tuple[int, int]]],
    with_root: bool = True,
) -> BracketScore:
    """Unlabelled bracket P/R/F1 of predicted spans (over each gold tree's words, punctuation included)
    against the gold trees, evalb-style (punctuation deleted, see the module docstring)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold trees but {len(predicted)} predictions")
    matched = n_gold = n_pred = 0
    for tree, spans in zip(gold, predicted, strict=True):
        keep = _keep_map(tree.tags())
        g = remap_spans(tree.spans(), keep, with_root)
        p = remap_spans(spans, keep, with_root)
        matched += len(g & p)
        n_gold += len(g)
        n_pred += len(p)
    precision = 100.0 * matched / n_pred if n_pred else 0.0
    recall = 100.0 * matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BracketScore(precision, recall, f1, len(gold), n_gold, n_pred, matched)


def branching_spans(n: int, direction: str) -> set[tuple[int, int]]:
    """The spans of the purely right- (``(0,n), (1,n), ...``) or left-branching binary tree over n words."""
    if direction == "right":
        return {(i, n) for i in range(n - 1)}
    if direction == "left":
        return {(0, j) for j in range(2, n + 1)}
    raise ValueError(f"direction must be 'left' or 'right', got {direction!r}")
