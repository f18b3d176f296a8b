"""The user docs read in ten minutes: short sentences, no development history, links and commands that work.

The checks live in :mod:`tools.doc_style` (``python -m tools.doc_style`` prints the figures); these tests run them on
the repository and show on small pages that each check can fail.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tools import doc_style

REPO = Path(__file__).resolve().parents[2]

#: README.md's size limit: what it is, the two commands, a sweep config, the commands, the Python example, links.
README_MAX_BYTES = 12 * 1024

_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


def _page(tmp_path: Path, text: str) -> doc_style.PageProse:
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / "docs" / "page.md"
    path.write_text(text, encoding="utf-8")
    return doc_style.page_prose(path, tmp_path)


def test_sentences_of_readme_and_docs_average_at_most_25_words() -> None:
    pages = [doc_style.page_prose(path) for path in doc_style.user_pages()]
    assert {page.path for page in pages} >= {"README.md", "docs/getting-started.md", "docs/concepts.md"}
    assert all(page.sentences > 0 for page in pages), [page.path for page in pages if not page.sentences]
    assert doc_style.average_words(pages) <= doc_style.MAX_AVERAGE_WORDS


def test_no_development_history_in_docs_or_code() -> None:
    _, history = doc_style.report()
    assert history == []


def test_the_readme_is_at_most_12_kb() -> None:
    assert (REPO / "README.md").stat().st_size <= README_MAX_BYTES


def test_long_sentences_fail_and_code_tables_and_headings_are_not_prose(tmp_path: Path) -> None:
    long_sentence = " ".join(["word"] * 30) + "."
    page = _page(tmp_path, f"# A heading of many words that is not a sentence\n\n{long_sentence} Short one here.\n\n"
                           "```bash\nsentsweep sweep configs/demo.yaml --set num_samples=12 --set a=b\n```\n\n"
                           "| a | table | row | of | words |\n|---|---|---|---|---|\n\n"
                           "- A list item, `inline code` and [a link](other.md) count as words.\n")
    assert page.sentences == 3
    assert page.words == 30 + 3 + 10
    assert doc_style.average_words([page]) == pytest.approx(43 / 3)
    assert doc_style.average_words([_page(tmp_path, long_sentence)]) > doc_style.MAX_AVERAGE_WORDS


@pytest.mark.parametrize("line", [
    "Until " + "review 18 the default selected on SICK-R.",
    "This was fixed in " + "session 12.",
    "See " + "issue 14, item 7.",
    "The figure was with" + "drawn.",
    "SRE " + "review 16, finding 4: pods had no affinity.",
    "The specification is " + "METHODS" + ".md of the brief.",
    "Data in .." + "/shared/data.",
    "Measured " + "2026-11-24 on a quiet machine.",
])
def test_history_and_files_outside_the_repository_are_found(tmp_path: Path, line: str) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(f"A clean line.\n{line}\n", encoding="utf-8")
    assert [hit.split(":")[1] for hit in doc_style.history_lines(page, tmp_path)] == ["2"]


@pytest.mark.parametrize("name", ["benchmarks.md", "benchmarks-search.md"])
def test_a_benchmark_page_may_say_when_it_was_measured(tmp_path: Path, name: str) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / name
    page.write_text("Measured " + "2026-11-24 on commit 144be5e.\n", encoding="utf-8")
    assert doc_style.history_lines(page, tmp_path) == []


def _links(path: Path) -> list[str]:
    text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("    "))
    return [target for target in _LINK.findall(text) if "://" not in target]


def test_every_relative_link_of_readme_and_docs_names_a_file_of_the_repository() -> None:
    broken = []
    for page in doc_style.user_pages():
        for target in _links(page):
            resolved = (page.parent / target).resolve()
            if not resolved.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def _documented_commands() -> list[str]:
    """Every ``sentsweep ...`` line of the bash blocks in README.md and docs/, continuations joined."""
    commands = []
    for page in doc_style.user_pages():
        for block in _BASH_BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split("  #", 1)[0].strip()
                if line.startswith("sentsweep "):
                    commands.append(line)
    return commands


def test_every_documented_sentsweep_command_parses(capsys: pytest.CaptureFixture[str]) -> None:
    """Each command names a real sub-command with the positionals it needs (``--help`` exits 0)."""
    from sentsweep.cli import build_parser

    commands = _documented_commands()
    assert len(commands) >= 10
    refused = []
    for command in commands:
        try:
            build_parser().parse_known_args(shlex.split(command)[1:])
        except SystemExit as stop:
            if stop.code not in (0, None):
                refused.append(command)
    capsys.readouterr()
    assert refused == []
    with pytest.raises(SystemExit):
        build_parser().parse_known_args(["sweeep", "configs/demo.yaml"])
