"""``sentsweep sweep CONFIG --check``: the pre-start checks without Ray, what the sweep would run, exit 0 or 2, and
nothing left behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from sentsweep.cli import main

REPO = Path(__file__).resolve().parents[2]


def _check(config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    code = main(["sweep", str(config), "--check"])
    out, err = capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in tmp_path.iterdir() if p.suffix == ".yaml"]
    return code, out, err


@pytest.mark.parametrize(("name", "space", "first"), [
    ("demo.yaml", "'cosent'", "first point: scale=20, pooling=mean, lr=2e-05, batch_size=16, warmup_ratio=0.1"),
    ("cosent-mean-pooling.yaml", "'custom'", "first point: scale=20, lr=2e-05"),
    ("sncse-space.yaml", "'custom'", "first point: alpha=0.1, beta=0.3, temperature=0.05, lr=1e-05"),
])
def test_check_prints_what_the_sweep_runs_and_leaves_nothing(name: str, space: str, first: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _check(REPO / "configs" / name, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert f"search space {space}" in lines[0]
    assert first in lines
    assert "resources per trial: 1 CPU, 0 GPU" in lines
    assert any(line.startswith("after the search: ") and "test suite" in line for line in lines), lines
    assert any(line.startswith("trials: 8, 2 at a time;") for line in lines)
    assert f"tracking: sqlite:///{tmp_path}/mlruns.db" in out
    assert lines[-1].startswith("checks passed: config, search space, data, model, storage, tracking")


def test_the_user_configs_search_what_they_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _check(REPO / "configs" / "cosent-mean-pooling.yaml", tmp_path, monkeypatch, capsys)
    assert "  pooling: fixed 'mean'\n  scale: uniform [5, 40]\n  lr: loguniform [1e-05, 0.0001]\n" in out
    _, out, _ = _check(REPO / "configs" / "sncse-space.yaml", tmp_path, monkeypatch, capsys)
    assert "  alpha: uniform [0, 0.3]\n  beta: loguniform [alpha + 0.01, 2]\n" in out


@pytest.mark.parametrize(("name", "change", "field"), [
    ("cosent-mean-pooling.yaml", {"pooling": "avg"}, "search_space.pooling"),
    ("sncse-space.yaml", {"gamma": {"uniform": [0, 1]}}, "search_space.gamma"),
    ("sncse-space.yaml", {"temperature": {"loguniform": [0, 0.1]}}, "search_space.temperature"),
])
def test_a_mistake_is_one_line_and_exit_2(name: str, change: dict, field: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    raw = yaml.safe_load((REPO / "configs" / name).read_text())
    raw["search_space"] = {**raw["search_space"], **change}
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    code, out, err = _check(config, tmp_path, monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"sentsweep sweep: error: {config}: field '{field}': "), err


@pytest.mark.parametrize(("edit", "field"), [
    ({"model": "https://bob:s3cr3t-Value@hub.example/bert"}, "model"),
    ({"tracking": {"uri": "http://bob:s3cr3t/Value@127.0.0.1:5000"}}, "tracking.uri"),
    ({"storage_path": "s3://AKIA:s3cr3t-Value@bucket/x", "warm_start": "s3://AKIB:s3cr3t-Other@bucket/y"},
     "warm_start"),
])
def test_a_credential_mistake_is_one_line_naming_the_file_without_the_secret(
        edit: dict, field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A URI's login the sweep cannot take (in a field that is no URI field, with an unencoded '/', differing from
    another field's): exit 2, one line naming the file and the field, never the secret."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "creds.yaml"
    config.write_text(yaml.safe_dump({"name": "creds", "method": "cosent", **edit}), encoding="utf-8")
    code, out, err = _check(config, tmp_path, monkeypatch, capsys)
    assert code == 2 and out == "" and "s3cr3t" not in err
    assert err.count("\n") == 1 and err.startswith(f"sentsweep sweep: error: {config}: field '{field}': "), err


@pytest.mark.parametrize(("edit", "line"), [
    ({"num_sample": 3}, "field 'num_sample': unknown field; did you mean 'num_samples'?"),
    ({"fixed": {"max_step": 8}}, "field 'fixed.max_step': unknown field; did you mean 'max_steps'?"),
    ({"scheduler": {"type": "asha", "grace": 1}}, "field 'scheduler.grace': unknown field; did you mean "
                                                  "'grace_period'?"),
    ({"fixed": {"lambd": 0.01}, "method": "sncse", "search_space": "sncse-demo"},
     "field 'fixed.lambd': unknown field; did you mean 'lambda'?"),
])
def test_a_misspelled_field_names_the_field_it_is_close_to(edit: dict, line: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A misspelled field at the top, in a section or under ``fixed``: exit 2, one line naming the file, the field
    and the known field closest to it, and nothing left behind."""
    raw = {"name": "typo", "method": "cosent", **edit}
    config = tmp_path / "typo.yaml"
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    code, out, err = _check(config, tmp_path, monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.strip() == f"sentsweep sweep: error: {config}: {line}"


@pytest.mark.parametrize("where", ["env", "config", "sample"])
def test_check_says_where_the_trials_read_their_data(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The data folder the trials will read, and what chose it: the config's data_dir, $SENTSWEEP_DATA, or the
    bundled sample (figures of a demo, not of the papers)."""
    from sentsweep.data.source import SAMPLE_DIR

    data = tmp_path / "data"
    shutil.copytree(SAMPLE_DIR, data)
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    monkeypatch.delenv("SENTSWEEP_DATA", raising=False)
    if where == "env":
        monkeypatch.setenv("SENTSWEEP_DATA", str(data))
    elif where == "config":
        raw["data_dir"] = str(data)
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(config), "--check"]) == 0
    expected = {"env": f"data: {data} ($SENTSWEEP_DATA)", "config": f"data: {data} (data_dir)",
                "sample": f"data: {SAMPLE_DIR} (the bundled sample)"}[where]
    assert expected in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(("fixed", "given", "line"), [
    ({}, ["--set", "fixed.max_step=8"], "--set: field 'fixed.max_step': unknown field; did you mean 'max_steps'?"),
    ({}, ["--set", "num_samples=0"], "--set: field 'num_samples': Input should be greater than or equal to 1"),
    ({"lr": "fast"}, ["--set", "num_samples=3"], "FILE: field 'fixed.lr': "),  # the file's mistake stays the file's
])
def test_a_mistake_a_set_made_names_set_not_the_file(fixed: dict, given: list[str], line: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump({"name": "mine", "method": "cosent", "fixed": fixed}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code = main(["sweep", str(config), "--check", *given])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"sentsweep sweep: error: {line.replace('FILE', str(config))}"), err


def test_a_missing_data_dir_names_the_field_and_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mine.yaml"
    missing = tmp_path / "no-such-data"
    config.write_text(yaml.safe_dump({"name": "mine", "method": "cosent", "data_dir": str(missing)}), encoding="utf-8")
    code, out, err = _check(config, tmp_path, monkeypatch, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"sentsweep sweep: error: {config}: field 'data_dir': {missing}: data directory does not "
                          "exist"), err


@pytest.mark.parametrize(("change", "line"), [
    ({}, "confirmation of the 3 best configurations x 3 further seeds (up to 9 trials); test suite 'sts' on the "
         "winner; export of the winner's model"),
    ({"confirm": {"top_k": 1, "seeds": 1}, "final_tasks": "stsb", "export": False, "register_model": "mine"},
     "confirmation of the best configuration x 1 further seed (up to 1 trial); test suite 'stsb' on the winner; "
     "registered as 'mine'"),
    ({"confirm": {"top_k": 0}, "final_tasks": None, "export": False}, "no confirmation stage; no test evaluation"),
])
def test_check_says_what_runs_after_the_search(change: dict, line: str) -> None:
    """The trainings a sweep adds once its search ended, which a newcomer's budget must hold too."""
    from sentsweep.platform.config import parse_sweep_config
    from sentsweep.platform.driver.preflight import after_the_search

    assert after_the_search(parse_sweep_config({"name": "s", "method": "cosent", **change})) == line


def test_check_names_the_budget_a_convergence_that_cannot_end_early_and_an_extra_point_outside_the_space(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    raw.update(budget={"gpu_hours": 2}, stop_when="converged",
               search_space={"base": "cosent", "extra_points": [{"lr": 0.5}, {"lr": 5.0e-5}]})
    config = tmp_path / "mine.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    code, out, err = _check(config, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert "budget: gpu_hours 2" in lines
    assert "note: convergence.min_trials (20) is not below num_samples (8): the check never ends the search early" \
        in lines
    assert "search_space.extra_points[0]: the space does not give lr 0.5 on this point's branch" in caplog.text
    assert "extra_points[1]" not in caplog.text
    assert any(line.startswith("then: ") and "lr=5e-05" in line for line in lines)
