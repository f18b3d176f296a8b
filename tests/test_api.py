"""The public API: ``import sentsweep`` is light, gives its names lazily, and the README's example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import sentsweep
from sentsweep.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def test_import_is_light_and_names_load_on_first_use() -> None:
    code = (
        "import sys, sentsweep\n"
        "heavy = {'torch', 'ray', 'mlflow', 'transformers', 'optuna'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_the_public_names() -> None:
    assert set(sentsweep.__all__) >= {"train", "sweep", "resume", "evaluate", "load_encoder", "CosentConfig",
                                      "SncseConfig", "MultiviewConfig", "METHODS", "SEARCH_SPACES"}
    assert set(sentsweep.METHODS) == {"cosent", "sncse", "multiview"}
    assert {s.method for s in sentsweep.SEARCH_SPACES.values()} == set(sentsweep.METHODS)
    for name, method in sentsweep.METHODS.items():
        assert getattr(sentsweep, method.config_cls.__name__) is method.config_cls, name
    with pytest.raises(AttributeError):
        sentsweep.nothing_here  # noqa: B018


def test_train_takes_a_mapping_with_the_method(tiny_bert_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="method"):
        sentsweep.train({"method": "simcse"})
    run = sentsweep.train({"method": "cosent", "model": str(tiny_bert_dir), "max_steps": 2, "eval_every": 2,
                           "max_train_pairs": 16, "max_dev_pairs": 20, "test_tasks": "stsb_test"},
                          output_dir=tmp_path / "run", log=None)
    assert run.method == "cosent" and run.best_step == 2 and len(run.history) == 1
    assert isinstance(run.config, sentsweep.CosentConfig) and "stsb_test" in run.metrics


def readme_example() -> str:
    """The first python block of README's "From Python" section."""
    text = (REPO / "README.md").read_text()
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README's From Python section has no python example"
    return match.group(1)


def test_the_readme_example_runs(minilm_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SENTSWEEP_DATA", raising=False)  # the bundled sample
    exec(compile(readme_example(), "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("STS-B dev ") and printed[1] == "(1, 384)"
    assert -100 <= float(printed[2]) <= 100
    assert (tmp_path / "runs" / "quick" / "best" / "model.safetensors").is_file()
