"""Readability checks of the user docs: sentence length and development history.

``python -m tools.doc_style`` prints each page's size, its prose's sentences and words, the average sentence
length over README.md and docs/, and every line that tells development history. It exits 1 when the average is
above :data:`MAX_AVERAGE_WORDS` or a history line is found. Prose is what a reader reads as sentences: fenced code
blocks, tables, headings and HTML comments are skipped, inline code counts as one word.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: The most words a sentence may average across README.md and docs/.
MAX_AVERAGE_WORDS = 25.0

#: Development history: numbered work periods, issue, review and finding numbers, withdrawn figures.
HISTORY = re.compile(
    r"\b(?:security |SRE |referee )?reviews? (?:\d|[HML]\d)"
    r"|\bsessions? \d"
    r"|\bissues? #?\d"
    r"|\bfindings? \d"
    r"|\b(?:until|before|since|after) (?:session|issue|review)\b"
    r"|\bwork periods?\b"
    r"|\bwithdrawn\b"
    r"|\bpreviously\b"
    r"|\b(?:it|which|this|that) used to\b"
    r"|\bused to be\b",
    re.IGNORECASE,
)

#: Files outside the repository: the project brief's method notes and the research data's folder. The tests may
#: look for the data there (``tests/conftest.py``); nothing a user reads or runs may.
OUTSIDE = re.compile(r"METHODS\.md|\.\./shared\b|/work/shared\b")
OUTSIDE_ALLOWED = ("tests/",)

#: A calendar date; allowed only where a benchmark says when it was measured and in the changelog.
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
DATED_PAGES = frozenset({"docs/benchmarks.md", "docs/benchmarks-search.md", "CHANGELOG.md"})

#: Where code comments and docstrings are searched for history (the bundled sample data is text of others).
CODE_ROOTS = ("sentsweep", "tools", "bench", "configs", "k8s", "docker", "tests")
CODE_SUFFIXES = frozenset({".py", ".yaml", ".yml", ".toml", ".cfg", ".txt", ".md", ".example", ".sh", ".Dockerfile"})
CODE_NAMES = frozenset({"Dockerfile", "Makefile"})
CODE_SKIP = ("sentsweep/data/sample/", "tools/doc_style.py", "tests/tools/test_doc_style.py")

_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z`(\"*])")
_WORD = re.compile(r"[A-Za-z0-9][\w'./+-]*")


@dataclass(frozen=True)
class PageProse:
    """The sentences of one page and their words."""

    path: str
    size: int
    sentences: int
    words: int


def user_pages(repo: Path = REPO) -> list[Path]:
    """README.md and every page of docs/, in a stable order."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def prose_blocks(text: str) -> list[str]:
    """The page's paragraphs and list items as single lines, without code, tables, headings or comments."""
    blocks: list[str] = []
    current: list[str] = []
    in_fence = False
    in_comment = False

    def flush() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if in_comment or line.lstrip().startswith("<!--"):
            in_comment = "-->" not in line
            flush()
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "|")) or line.startswith("    "):
            flush()
            continue
        if _LIST_ITEM.match(line):
            flush()
            stripped = _LIST_ITEM.sub("", line).strip()
        current.append(stripped)
    flush()
    return blocks


def sentences(block: str) -> list[str]:
    """A block's sentences: inline code and links are reduced to a word, then split at a sentence's end."""
    plain = _LINK.sub(r"\1", _INLINE_CODE.sub("CODE", block))
    return [part for part in _SENTENCE_END.split(plain) if _WORD.search(part)]


def page_prose(path: Path, repo: Path = REPO) -> PageProse:
    """Count one page's sentences and words."""
    text = path.read_text(encoding="utf-8")
    found = [sentence for block in prose_blocks(text) for sentence in sentences(block)]
    return PageProse(
        path=str(path.relative_to(repo)),
        size=len(text.encode("utf-8")),
        sentences=len(found),
        words=sum(len(_WORD.findall(sentence)) for sentence in found),
    )


def average_words(pages: list[PageProse]) -> float:
    """Words per sentence over all the pages together."""
    total = sum(page.sentences for page in pages)
    return sum(page.words for page in pages) / total if total else 0.0


def history_lines(path: Path, repo: Path = REPO) -> list[str]:
    """``path:line: text`` for each line that tells history, names a file outside the repository, or dates a page."""
    relative = str(path.relative_to(repo))
    hits = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        outside = OUTSIDE.search(line) and not relative.startswith(OUTSIDE_ALLOWED)
        dated = relative not in DATED_PAGES and relative.endswith(".md") and DATE.search(line)
        if HISTORY.search(line) or outside or dated:
            hits.append(f"{relative}:{number}: {line.strip()[:160]}")
    return hits


def code_files(repo: Path = REPO) -> list[Path]:
    """The source, config and manifest files whose comments are searched for history."""
    found = []
    for root in CODE_ROOTS:
        for path in sorted((repo / root).rglob("*")):
            relative = str(path.relative_to(repo))
            readable = path.suffix in CODE_SUFFIXES or path.name in CODE_NAMES
            if path.is_file() and readable and not relative.startswith(CODE_SKIP):
                found.append(path)
    found.extend(path for path in (repo / "Makefile", repo / "pyproject.toml") if path.is_file())
    return found


def report(repo: Path = REPO) -> tuple[list[PageProse], list[str]]:
    """Each user page's prose, and the history lines of the pages, the changelog and the code."""
    pages = [page_prose(path, repo) for path in user_pages(repo)]
    searched = [*user_pages(repo), *code_files(repo)]
    changelog = repo / "CHANGELOG.md"
    if changelog.is_file():
        searched.append(changelog)
    history = [hit for path in searched for hit in history_lines(path, repo)]
    return pages, history


def main() -> int:
    pages, history = report()
    for page in pages:
        mean = page.words / page.sentences if page.sentences else 0.0
        print(f"{page.path:32} {page.size / 1024:6.1f} KB  {page.sentences:4} sentences  {mean:5.1f} words each")
    mean = average_words(pages)
    print(f"average sentence: {mean:.1f} words (at most {MAX_AVERAGE_WORDS:g})")
    print(f"history lines: {len(history)}")
    for hit in history:
        print(f"  {hit}")
    return 0 if mean <= MAX_AVERAGE_WORDS and not history else 1


if __name__ == "__main__":
    sys.exit(main())
