"""Every ``sentsweep ...`` command the documentation shows parses with the CLI's own parser (nothing runs): the code
blocks and inline code spans of README.md and docs/*.md, and the commands in the comments of configs/*.yaml.

A placeholder stays as written (``CONFIG``, ``SWEEP_DIR``): argparse takes it as a value. Optional parts in square
brackets are parsed as given (the brackets dropped), and ``...`` (more of the same) is dropped."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from sentsweep.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```|~~~)")
#: Where a command starts on a line: its beginning, a prompt, a shell operator or an environment assignment before it.
START = re.compile(r"(?:^\s*|[;&|(]\s*|\$\s+|^\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)+)sentsweep\s")


#: Flags written as alternatives (``--pip/--uv``).
ALTERNATIVES = re.compile(r"--?\w[\w-]*(?:/--?\w[\w-]*)+")


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """The lines inside fenced code blocks of a markdown file, with their numbers."""
    lines, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            inside = not inside
        elif inside:
            lines.append((number, line))
    return lines


def _inline_spans(path: Path) -> list[tuple[int, str]]:
    """The inline code spans outside fenced blocks that begin with ``sentsweep`` and give a flag and three words
    after it, with their line numbers (a shorter span names a command or a flag in prose: `sentsweep train`,
    `sentsweep evaluate --max-length`)."""
    spans, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            inside = not inside
        elif not inside:
            spans += [(number, span) for span in re.findall(r"`(sentsweep\s[^`]+)`", line)
                      if re.search(r"\s-", span) and len(span.split()) > 3]  # an invocation, not a name
    return spans


def _comment_lines(path: Path) -> list[tuple[int, str]]:
    """The comment text of a YAML file's lines, with their numbers."""
    return [(n, line.split("#", 1)[1]) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if line.lstrip().startswith("#")]


def _joined(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines continued with a trailing backslash joined into one."""
    out: list[tuple[int, str]] = []
    carry: tuple[int, str] | None = None
    for number, line in lines:
        if carry is not None:
            number, line = carry[0], carry[1] + " " + line.strip()
        carry = (number, line[:-1]) if line.rstrip().endswith("\\") else None
        if carry is None:
            out.append((number, line))
    return out


def _command(line: str) -> list[str] | None:
    """The argv after ``sentsweep`` of the first command on ``line``, None when it holds none."""
    match = START.search(line)
    if match is None:
        return None
    text = line[match.end():]
    text = re.split(r"\s+#|\s*(?:&&|\|\||;|\|(?!\S))\s*", text, maxsplit=1)[0]  # the command alone
    text = text.replace("[", " ").replace("]", " ")
    try:
        words = shlex.split(text)
    except ValueError:  # an unbalanced quote: the prose around a command
        return None
    if words and words[0].endswith(":"):  # a line the CLI prints (``sentsweep data: error: ...``), not a command
        return None
    words = [w.split("/")[0] if ALTERNATIVES.fullmatch(w) else w for w in words]  # --pip/--uv: either one
    return [w for w in words if w not in ("...", "…") and not w.startswith(("<", "`"))]


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(where, argv)`` for every documented command."""
    markdown = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    sources = [(p, _code_lines(p)) for p in markdown] + [(p, _inline_spans(p)) for p in markdown]
    sources += [(p, _comment_lines(p)) for p in sorted((ROOT / "configs").glob("*.yaml"))]
    found = []
    for path, lines in sources:
        for number, line in _joined(lines):
            argv = _command(line)
            if argv:
                found.append((f"{path.relative_to(ROOT)}:{number}", argv))
    return found


COMMANDS = documented_commands()


def test_the_documentation_shows_commands_of_every_group():
    verbs = {argv[0] for _, argv in COMMANDS}
    assert {"sweep", "resume", "compare", "negate", "data"} <= verbs, verbs
    assert len(COMMANDS) >= 40, len(COMMANDS)


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_documented_command_parses(where: str, argv: list[str]) -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(argv)
        except SystemExit as exc:
            if exc.code not in (0, None):  # --help and --version exit 0
                pytest.fail(f"{where}: sentsweep {shlex.join(argv)}\n{err.getvalue().strip().splitlines()[-1]}")


def test_a_wrong_flag_is_caught():
    """The check can fail: the flag a config comment once gave ``negate``."""
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        build_parser().parse_args(["negate", "prepared:wiki1m", "-o", "out.tsv"])
