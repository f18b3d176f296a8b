"""``docs/own-data.md`` followed as a user would: its commands (prepare, negate, parse) run on tiny files written
here, each of its sweep configs passes the pre-start checks on the data they prepared, and its error lines are what
``prepare`` prints."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sentsweep.cli import main
from sentsweep.errors import DataError
from tests.data.hub_cache import hf_cache_file

PAGE = Path(__file__).resolve().parents[2] / "docs" / "own-data.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)

SENTENCES = [
    "The committee approved the new budget after a long debate on Tuesday evening in the town hall.",
    "Heavy rain caused flooding in several villages along the river during the last week of March.",
    "She has been teaching mathematics at the local school for twenty years and still enjoys it.",
    "The museum opened a new wing that shows paintings from the early years of the century.",
]
FIXTURES = {
    "my-pairs.csv": "sentence1,sentence2,score\n"
                    f"{SENTENCES[0]},The council passed the budget after a debate.,4.2\n"
                    f"\"{SENTENCES[1]}\",\"Floods hit villages, after the rain.\",3.6\n"
                    f"{SENTENCES[2]},The museum opened a new wing.,0.2\n",
    "my-pairs.jsonl": f'{{"left": "{SENTENCES[0]}", "right": "The budget was approved.", "similarity": 0.84}}\n'
                      f'{{"left": "{SENTENCES[3]}", "right": "It rained for a week.", "similarity": 0.05}}\n',
    "my-sentences.txt": "\n".join(SENTENCES) + "\n",
    "my-documents.txt": f"# First\n{SENTENCES[0]}\n{SENTENCES[1]}\n\n# Second\n{SENTENCES[2]}\n{SENTENCES[3]}\n",
}


def blocks(language: str) -> list[str]:
    """The page's fenced blocks of ``language``, in order."""
    return [body for lang, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")) if lang == language]


def commands() -> list[list[str]]:
    """Every ``sentsweep`` command of the page's bash blocks, as an argument list."""
    return [shlex.split(line)[1:] for body in blocks("bash") for line in body.splitlines()
            if line.startswith("sentsweep ")]


def pre_start_checks(path: Path) -> None:
    """What a sweep runs before Ray starts: the config, its space's first points as trial configs, then storage,
    tracking, model, spaCy and data (:mod:`sentsweep.platform.driver.preflight`)."""
    from sentsweep.platform.config import load_sweep_config
    from sentsweep.platform.driver.preflight import check_sweep
    from sentsweep.platform.driver.specs import resolve_specs, validate_trials

    config = load_sweep_config(path).resolved()
    trainable, space = resolve_specs(config, str(path))
    check_sweep(config, validate_trials(config, trainable, space, str(path)), str(path))


@pytest.fixture
def user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding the user's files, a private prepared root and a hub cache that holds
    ``sentence-transformers/stsb`` as the hub delivers its parquet conversion (the hub itself offline)."""
    import huggingface_hub.constants

    for name, text in FIXTURES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    cache = tmp_path / "hf-cache"
    table = pa.table({"sentence1": SENTENCES[:3], "sentence2": SENTENCES[1:], "score": [0.1, 0.5, 0.25]})
    pq.write_table(table, hf_cache_file(cache, "sentence-transformers/stsb", "default/train/0000.parquet",
                                        ref="refs/convert/parquet"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SENTSWEEP_PREPARED", str(tmp_path / "prepared"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_page_has_a_command_and_a_config_for_each_method() -> None:
    configs = [re.search(r"^method: (\w+)", body, re.MULTILINE) for body in blocks("yaml")]
    assert [m.group(1) for m in configs if m] == ["cosent", "sncse", "multiview"]
    kinds = [argv[argv.index("--kind") + 1] for argv in commands() if argv[:2] == ["data", "prepare"]]
    assert kinds.count("scored-pairs") == 3 and kinds.count("corpus") == 2
    assert any("--hub" in argv for argv in commands())
    assert [argv[0] for argv in commands() if argv[0] != "data"] == ["negate", "parse"]


def test_the_commands_then_each_config_passes_the_pre_start_checks(user_folder: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for argv in commands():
        assert main(argv) == 0, capsys.readouterr().err
        said = f"configs name it: prepared:{argv[2]}" if argv[0] == "data" else {"negate": "-> ",
                                                                                "parse": ": parsed in "}[argv[0]]
        assert said in capsys.readouterr().out
    for number, body in enumerate(blocks("yaml")):
        path = user_folder / f"sweep-{number}.yaml"
        path.write_text(body, encoding="utf-8")
        pre_start_checks(path)
    (user_folder / "prepared" / "my-pairs" / "manifest.json").unlink()  # as if never prepared
    with pytest.raises(DataError, match=r"field 'fixed\.train_data' of \S+sweep-0\.yaml: dataset "
                       "'prepared:my-pairs' is not prepared"):
        pre_start_checks(user_folder / "sweep-0.yaml")


def test_the_error_lines_are_what_prepare_prints(user_folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = blocks("text")[-1].splitlines()
    lines = FIXTURES["my-pairs.csv"].splitlines()
    (user_folder / "my-pairs.csv").write_text("\n".join([*lines[:2], "only,two", *lines[3:]]) + "\n")
    pairs = FIXTURES["my-pairs.jsonl"].splitlines()
    (user_folder / "my-pairs.jsonl").write_text(pairs[0] + "\n" + pairs[1].replace("0.05", "1.3") + "\n")
    for argv, expected in zip(commands()[:2], shown, strict=True):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == expected
    assert not (user_folder / "prepared").exists()
