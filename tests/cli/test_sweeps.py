"""``sentsweep sweep | resume | compare | export`` on the shared toy sweep (no mocks: real MLflow)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sentsweep.cli import build_parser, main
from sentsweep.errors import ConfigError


def run_cli(*argv: str) -> int:
    """The command's handler, called as ``main`` does, but letting a user error propagate."""
    args = build_parser().parse_args(list(argv))
    return args.handler(args)


def test_compare_markdown_shows_sweeps_and_trials(toy_sweep, capsys):
    assert run_cli("compare", "--tracking-uri", toy_sweep.tracking_uri, "--sweeps", "toy") == 0
    out = capsys.readouterr().out
    assert "## Sweeps" in out and "## Trials" in out and toy_sweep.sweep_name in out
    trials = out.split("## Trials")[1]
    assert len([line for line in trials.splitlines() if line.startswith(f"| {toy_sweep.sweep_name} | ")]) == 5
    assert "pruned by ASHA at iteration 1 (step 2)" in out and "toy failure at step 1" in out


def test_compare_csv_and_plots(toy_sweep, tmp_path, capsys):
    out = tmp_path / "trials.csv"
    assert run_cli("compare", "--tracking-uri", toy_sweep.tracking_uri, "--experiment", "toy",
                   "--format", "csv", "--out", str(out), "--plots", str(tmp_path / "plots")) == 0
    table = pd.read_csv(out)
    assert len(table) == 5 and {"status", "reason", "lr", "scale", "stsb_dev"} <= set(table.columns)
    assert sorted(table["status"]) == ["failed", "failed", "finished", "pruned", "pruned"]
    plots = {f"{name}.{kind}" for name in ("best_so_far", "dev_curves") for kind in ("png", "csv")}  # with its data
    assert {p.name for p in (tmp_path / "plots").iterdir()} == plots
    assert "wrote" in capsys.readouterr().out


def test_compare_errors_name_what_is_missing(toy_sweep, tmp_path):
    with pytest.raises(ConfigError, match="no sweep named 'nope'"):
        run_cli("compare", "--tracking-uri", toy_sweep.tracking_uri, "--sweeps", "nope")
    with pytest.raises(ConfigError, match="no MLflow experiment 'nope'"):
        run_cli("compare", "--tracking-uri", toy_sweep.tracking_uri, "--experiment", "nope")
    with pytest.raises(ConfigError, match="no MLflow database"):
        run_cli("compare", "--tracking-uri", f"sqlite:///{tmp_path / 'missing.db'}")


def test_export_a_trial_run_and_a_sweep_run(toy_sweep, tmp_path):
    from sentence_transformers import SentenceTransformer

    uri = toy_sweep.tracking_uri
    for run_id, dest in ((toy_sweep.best_run_id, tmp_path / "trial"),
                         (toy_sweep.parent_run_id, tmp_path / "sweep")):
        assert run_cli("export", run_id, str(dest), "--tracking-uri", uri) == 0
        assert SentenceTransformer(str(dest), device="cpu").encode(["a dog"]).shape == (1, 32)
    with pytest.raises(ConfigError, match="not empty"):
        run_cli("export", toy_sweep.best_run_id, str(tmp_path / "trial"), "--tracking-uri", uri)
    with pytest.raises(ConfigError, match="no run 'deadbeef'"):
        run_cli("export", "deadbeef", str(tmp_path / "x"), "--tracking-uri", uri)


def test_sweep_rejects_a_bad_config_before_starting_ray(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nmethod: cosent\nnum_samples: many\n")
    with pytest.raises(ConfigError) as err:
        run_cli("sweep", str(path))
    assert err.value.field == "num_samples" and err.value.file == str(path)
    with pytest.raises(ConfigError, match="fixed.max_step"):
        run_cli("sweep", str(Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"),
                "--set", "fixed.max_step=3")
    with pytest.raises(ConfigError, match="not a sentsweep sweep folder"):
        run_cli("resume", str(tmp_path))
    storage = tmp_path / "ray_results"
    with pytest.raises(ConfigError, match="cannot change on resume: seed") as err:  # also with nothing to resume
        run_cli("sweep", str(Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"), "--resume-interrupted",
                "--allow-change", "seed", "--set", f"storage_path={storage}")
    assert err.value.field == "--allow-change" and not storage.exists()


def test_a_user_error_is_one_line_and_status_2(capsys):
    assert main(["compare", "--tracking-uri", "sqlite:////nonexistent/mlruns.db"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sentsweep compare: error: ") and err.count("\n") == 1


def test_an_unexpected_error_is_one_line_naming_a_log_with_the_traceback(tmp_path, private_cache, capsys):
    broken = tmp_path / "mlruns.db"
    broken.write_text("this is not an sqlite database\n" * 100)
    assert main(["compare", "--tracking-uri", f"sqlite:///{broken}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sentsweep compare: unexpected error: ") and err.count("\n") == 1
    log = Path(err.rsplit("full traceback in ", 1)[1].rstrip(")\n"))
    assert log.parent == private_cache / "logs" and log.name.startswith("sentsweep-")
    text = log.read_text()
    assert text.startswith("sentsweep compare --tracking-uri") and "Traceback (most recent call last)" in text


def test_the_sweep_commands_quiet_library_lines_a_user_set_is_kept(monkeypatch) -> None:
    """MLflow's "View run" line per run and Ray's header boxes are off unless the user turned them on."""
    import os

    from sentsweep.cli.sweeps import _quiet_libraries

    monkeypatch.delenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", raising=False)
    monkeypatch.setenv("RAY_AIR_NEW_OUTPUT", "1")
    _quiet_libraries()
    assert os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] == "true"
    assert os.environ["RAY_AIR_NEW_OUTPUT"] == "1"
    from mlflow.environment_variables import MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT

    assert MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT.get() is True


def test_resume_interrupted_says_nothing_before_a_running_drivers_lock_refuses_it(tmp_path, monkeypatch, capsys):
    """The sweep is still running elsewhere: the lock's refusal is the first thing said. The line that names the
    folder is the resumed sweep's, said once it holds the lock (``found_interrupted``)."""
    from sentsweep.platform.driver import resume, sweep
    from sentsweep.platform.folder.lock import LockHeldError

    seen: dict[str, object] = {}

    def locked(folder: str, **kwargs: object) -> None:
        seen.update(kwargs, folder=folder)
        raise LockHeldError(f"{folder} is locked by another driver (pid 4242)")

    monkeypatch.setattr(resume, "interrupted_sweep", lambda config: str(tmp_path / "demo-1a2b"))
    monkeypatch.setattr(sweep, "resume_sweep", locked)
    with pytest.raises(LockHeldError, match="locked by another driver"):
        run_cli("sweep", str(Path(__file__).resolve().parents[2] / "configs" / "demo.yaml"), "--resume-interrupted",
                "--set", f"storage_path={tmp_path}")
    assert capsys.readouterr().out == ""
    assert seen["folder"] == str(tmp_path / "demo-1a2b") and seen["found_interrupted"] is True
