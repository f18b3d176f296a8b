"""The command line: argument parsing, user errors without a traceback, evaluate output files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentsweep.cli import build_parser, main
from sentsweep.yaml_io import apply_overrides, read_yaml


def test_parser_knows_the_commands() -> None:
    args = build_parser().parse_args(["evaluate", "--model", "m", "--tasks", "stsb"])
    assert args.command == "evaluate" and args.tasks == "stsb"
    args = build_parser().parse_args(["train", "c.yaml", "--set", "lr=1e-5", "--set", "loss=mse"])
    assert args.overrides == ["lr=1e-5", "loss=mse"]



def test_every_option_of_every_command_says_what_it_does() -> None:
    """`sentsweep COMMAND --help` explains each option: none is listed without a line of help."""
    import argparse

    def bare(parser: argparse.ArgumentParser, path: str) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [name for cmd, sub in action.choices.items() for name in bare(sub, f"{path} {cmd}")]
            elif action.option_strings and action.dest != "help" and not action.help:
                found.append(f"{path} {action.option_strings[0]}")
        return found

    assert bare(build_parser(), "sentsweep") == []

def test_bad_yaml_names_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: cosent\nlr: [1, 2\nloss: mse\n")
    assert main(["train", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "line" in err and "Traceback" not in err


def test_unknown_field_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("method: cosent\nlearning_rate: 0.1\n")
    assert main(["train", str(cfg)]) == 2
    assert "learning_rate" in capsys.readouterr().err


def test_overrides_parse_yaml_scalars_and_nest() -> None:
    out = apply_overrides({"a": 1, "b": {"c": 2}}, ["a=3e-5", "b.d=true", "e=mean"])
    assert out == {"a": 3e-5, "b": {"c": 2, "d": True}, "e": "mean"}
    with pytest.raises(Exception, match="key=value"):
        apply_overrides({}, ["novalue"])


def test_read_yaml_missing_file(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="not found"):
        read_yaml(tmp_path / "missing.yaml")


def test_evaluate_writes_json_with_protocols_and_csv(tiny_bert_dir: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "stsb_test,sickr", "--max-length", "40",
                 "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    metrics, protocols = written["metrics"], written["info"]["protocols"]
    assert set(metrics) >= {"stsb_test", "sickr_test"}
    assert all(isinstance(v, float) for v in metrics.values())
    assert set(protocols) == set(metrics)  # every figure with its protocol
    stsb = protocols["stsb_test"]
    assert (stsb["task"], stsb["split"], stsb["max_length"], stsb["pooling"]) == ("stsb", "test", 40, "mean")
    assert stsb["precision"] == "float32"  # evaluation never autocasts unless eval_amp (on a GPU)
    assert len(stsb["data_sha256"]) == 64 and stsb["code_version"].startswith("sentsweep")
    assert protocols["sickr_test"]["data_sha256"] != stsb["data_sha256"]
    printed = capsys.readouterr().out
    assert "stsb" in printed and "sickr" in printed
    csv = tmp_path / "r.csv"
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "stsb_test", "--out", str(csv)]) == 0
    assert csv.read_text().splitlines()[0].startswith("task")


def test_evaluate_on_the_bundled_sample_says_so(tiny_bert_dir: Path, shared_data: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Without $SENTSWEEP_DATA or --data-dir, ``evaluate`` scored the bundled sample (a few hundred rows a
    task) without a word; now one line on stderr says so, and nothing with real data."""
    monkeypatch.delenv("SENTSWEEP_DATA", raising=False)
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "stsb_test"]) == 0
    err = capsys.readouterr().err.strip().splitlines()  # then the encoding's progress
    assert err[0] == ("warning: data: the bundled sample (data_dir and $SENTSWEEP_DATA unset): a demo's data, "
                      "figures not comparable to the papers'")
    assert sum("bundled sample" in line for line in err) == 1
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "stsb_test", "--data-dir",
                 str(shared_data)]) == 0
    assert "bundled sample" not in capsys.readouterr().err


def test_evaluate_takes_every_senteval_option(tiny_bert_dir: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """One flag per trial-config ``senteval_*`` field; the setting and its folds reach the protocol."""
    from sentsweep.evaluation.senteval import SENTEVAL_OPTION_FIELDS

    args = build_parser().parse_args(["evaluate", "--senteval-setting", "fast", "--kfold", "3"])
    assert (args.senteval_setting, args.senteval_kfold) == ("fast", 3)
    assert all(hasattr(args, field) for field in SENTEVAL_OPTION_FIELDS)
    out = tmp_path / "mr.json"
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "mr", "--senteval-setting", "lbfgs",
                 "--senteval-kfold", "2", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["info"]["senteval_setting"] == "lbfgs" and written["info"]["senteval_kfold"] == 2
    classifier = written["info"]["protocols"]["mr_acc"]["classifier"]
    assert classifier.startswith("lbfgs") and "kfold 2" in classifier
    capsys.readouterr()
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "mr", "--senteval-kfold", "1"]) == 2
    assert "kfold must be >= 2" in capsys.readouterr().err


def test_evaluate_unknown_task_is_a_clean_error(tiny_bert_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", "--model", str(tiny_bert_dir), "--tasks", "stsz"]) == 2
    err = capsys.readouterr().err
    assert "stsz" in err and "Traceback" not in err


def test_every_command_in_one_parser_in_help_order() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    assert list(sub.choices) == ["evaluate", "train", "negate", "parse", "neighbours", "data", "sweep", "resume",
                                 "sync", "compare", "export", "dashboard", "submit", "jobs", "config"]
    args = parser.parse_args(["sweep", "demo.yaml", "--resume-interrupted"])
    assert (args.config, args.resume_interrupted) == ("demo.yaml", True)
    args = parser.parse_args(["sweep", "demo.yaml", "--check"])
    assert args.check is True and args.handler.__name__ == "cmd_sweep"
    assert parser.parse_args(["config", "reference"]).handler.__name__ == "cmd_reference"


def test_python_dash_m_runs_the_same_command() -> None:
    import subprocess
    import sys

    from sentsweep import __version__

    out = subprocess.run([sys.executable, "-m", "sentsweep.cli", "--version"], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == f"sentsweep {__version__}"
    bad = subprocess.run([sys.executable, "-m", "sentsweep.cli", "sweep"], capture_output=True, text=True)
    assert bad.returncode == 2 and "the following arguments are required: config" in bad.stderr


def test_train_prints_the_dev_curve_and_the_final_figures_only(tiny_bert_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(f"method: cosent\nmodel: {tiny_bert_dir}\nmax_steps: 2\neval_every: 2\nmax_train_pairs: 16\n"
                   "max_dev_pairs: 16\ntest_tasks: stsb_test\nbatch_size: 8\ndevice: cpu\n")
    assert main(["train", str(cfg), "--output", str(tmp_path / "out")]) == 0
    final = capsys.readouterr().out.split("final (best checkpoint):")[1].split("\nwrote ")[0]
    shown = [line.split()[0] for line in final.strip().splitlines()]
    assert "stsb_test" in shown and "stsb_dev" in shown
    assert "final" not in shown and "step" not in shown  # the sweep's bookkeeping, not a figure
