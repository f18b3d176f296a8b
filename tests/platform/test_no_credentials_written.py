"""A sweep whose tracking URI carries a password (``http://sweeper:SECRET@127.0.0.1:PORT``), run through the real
CLI in a process of its own against a real ``mlflow server --app-name basic-auth``: the sweep finishes (its
trials log through the credentials the driver put in the environment of the Ray it started), and ``SECRET``
is nowhere: not in the sweep folder (manifest, ``sweep.yaml``, ``tuner.pkl``, ``experiment_state-*.json``,
every trial's ``params.json``/``params.pkl``/``result.json``, checkpoints), not in MLflow's store (the server's
database, its auth database, its artifacts, its log), not in Ray's session folder (logs of every process),
not in anything printed. Then ``sentsweep resume`` without credentials in the environment stops on one line
naming the variables to set, and so do ``sync`` and ``compare``."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from mlflow import MlflowClient

from sentsweep.tracking.vocabulary import PARENT_TAG
from tools.harness.processes import LOOPBACK, end_group, free_port, repo_pythonpath, wait_for_port

pytest.importorskip("flask_wtf", reason="the `server` extra (flask-wtf) is not installed: no basic-auth app")

REPO = Path(__file__).resolve().parents[2]
USER = "sweeper"
SECRET = "s3cr3t" + secrets.token_hex(9)  # MLflow wants 12+ characters; unique, so a hit is ours

# The real CLI, with the toy method and space registered the way the built-in ones are (Ray's workers import
# the toy from the repository root on PYTHONPATH, as the driver does).
DRIVER = """
import sys
from sentsweep.cli import main
from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.registry import METHODS
from tests.platform.sweep_toy import TOY, TOY_SPACE

METHODS[TOY.name] = TOY
SEARCH_SPACES[TOY_SPACE.name] = TOY_SPACE
sys.exit(main(sys.argv[1:]))
"""


@dataclass
class AuthServer:
    url: str
    root: Path


@pytest.fixture
def auth_server(tmp_path: Path, mlflow_template: Path) -> Iterator[AuthServer]:
    """``mlflow server --app-name basic-auth`` on sqlite (a copy of the session's schema), one worker, its only
    account ``USER``/``SECRET`` (the admin); anonymous requests get 401."""
    root = tmp_path / "mlflow"
    root.mkdir()
    shutil.copy(mlflow_template, root / "mlflow.db")
    config = root / "basic_auth.ini"
    config.write_text(f"[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///{root / 'auth.db'}\n"
                      "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("MLFLOW_TRACKING_")}
    env.update(MLFLOW_AUTH_CONFIG_PATH=str(config), MLFLOW_AUTH_ADMIN_USERNAME=USER, MLFLOW_AUTH_ADMIN_PASSWORD=SECRET,
               MLFLOW_FLASK_SERVER_SECRET_KEY=secrets.token_hex(16), MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")
    port = free_port()
    log = root / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--host", LOOPBACK, "--port",
             str(port), "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
             "--artifacts-destination", str(root / "artifacts")],
            stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=root, start_new_session=True)
    try:
        wait_for_port(port, server, log, timeout=120, what="mlflow server")
        yield AuthServer(f"http://{LOOPBACK}:{port}", root)
    finally:
        end_group(server, grace=20)  # the group this test started, by its id


@pytest.fixture
def ray_tmp() -> Iterator[Path]:
    """A Ray temp folder of the sweep's own (short: Ray's socket paths must fit 107 characters)."""
    folder = Path(tempfile.mkdtemp(prefix="ssray-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _run_cli(tmp_path: Path, ray_tmp: Path, *argv: str) -> int:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("MLFLOW_TRACKING_", "RAY_ADDRESS", "AWS_"))}
    env.update(PYTHONPATH=repo_pythonpath(),
               RAY_TMPDIR=str(ray_tmp), SENTSWEEP_CACHE=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    return subprocess.run([sys.executable, str(driver), *argv], env=env, cwd=tmp_path, timeout=420,
                          check=False).returncode


def _files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink()
                  and needle in p.read_bytes())


@pytest.mark.cluster  # a sweep in a process of its own, with its own Ray: run by make test-cluster (CI runs both)
def test_no_credential_is_written_or_printed(tmp_path, tiny_bert_dir, auth_server, ray_tmp, capfd, monkeypatch):
    from tests.platform.sweep_toy import toy_config

    host = auth_server.url.removeprefix("http://")
    config = toy_config(tmp_path, tiny_bert_dir, f"http://{USER}:{SECRET}@{host}", num_samples=2,
                        max_concurrent_trials=2, scheduler={"type": "fifo"}, fixed={"max_steps": 4},
                        tracking={"artifact_location": None},
                        plots=False, register_model="toy-best")
    config_file = tmp_path / "sweep.yaml"  # the user's own file: the only place the password is written
    config_file.write_text(yaml.safe_dump(config.model_dump(mode="json")))

    # MLflow's own "View run ... at: URL" line, off by default, on here: the URL it prints must not carry the password
    monkeypatch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "false")
    status = _run_cli(tmp_path, ray_tmp, "sweep", str(config_file), "--address", "local", "--verbose")
    sweep_out = capfd.readouterr()
    printed = sweep_out.out + sweep_out.err
    assert status == 0, printed[-4000:]

    needle = SECRET.encode()
    assert _files_holding(tmp_path / "ray_results", needle) == []
    assert _files_holding(auth_server.root, needle) == []
    assert _files_holding(ray_tmp, needle) == []
    assert SECRET not in printed

    # The trials logged (with the credentials the workers inherited), and the records name the clean URI.
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", SECRET)
    client = MlflowClient(tracking_uri=auth_server.url)
    parent = client.search_runs([client.get_experiment_by_name("toy").experiment_id], "tags.`sentsweep.role` = 'sweep'")
    assert len(parent) == 1 and parent[0].info.status == "FINISHED"
    assert parent[0].data.params["tracking.uri"] == auth_server.url
    children = client.search_runs([parent[0].info.experiment_id], f"tags.`{PARENT_TAG}` = '{parent[0].info.run_id}'")
    assert len(children) == 2 and all(r.info.status == "FINISHED" and "train_loss" in r.data.metrics
                                      for r in children)
    assert f"View run {parent[0].info.run_name} at: {auth_server.url}/#/experiments/" in printed  # MLflow's own

    (sweep_dir,) = (tmp_path / "ray_results").iterdir()
    written = {p.name for p in sweep_dir.rglob("*") if p.is_file()}
    assert {"sentsweep_sweep.json", "sweep.yaml", "tuner.pkl", "params.json", "params.pkl", "result.json"} <= written
    assert any(name.startswith("experiment_state-") for name in written)

    assert (auth_server.root / "mlflow.db").stat().st_size > 0 and any((auth_server.root / "artifacts").rglob("*"))

    # Resume reads the clean URI from the folder and the credentials from the environment only.
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME")
    monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD")
    status = _run_cli(tmp_path, ray_tmp, "resume", str(sweep_dir), "--address", "local")
    resume_out = capfd.readouterr()
    assert status == 2, resume_out.out + resume_out.err
    assert resume_out.err.strip().splitlines() == [
        f"sentsweep resume: error: the tracking server {auth_server.url} asks for a login (HTTP 401): set "
        "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD in the environment"]


def _refused_line(command: str, url: str) -> str:
    return (f"sentsweep {command}: error: the tracking server {url} asks for a login (HTTP 401): set "
            "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD in the environment")


def test_sync_and_compare_without_a_login_say_so_in_one_line(tmp_path, auth_server, capsys, monkeypatch) -> None:
    """The server answers 401 to anonymous requests: ``sync`` and ``compare`` stop on the line ``resume`` prints
    (exit 2), not on an unexpected MlflowException."""
    import time

    from sentsweep.cli import main
    from sentsweep.platform.config import SweepConfig
    from sentsweep.platform.location import SweepManifest, locate

    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    sweep_dir = tmp_path / "sweep"
    sweep_dir.mkdir()
    config = SweepConfig(name="s", method="cosent", storage_path=str(tmp_path),
                         tracking={"uri": auth_server.url, "experiment": "toy"})
    locate(str(sweep_dir)).write_manifest(SweepManifest(
        sweep_name="s", config=config.model_dump(mode="json"), parent_run_id="0" * 32, experiment_id="1",
        tracking_uri=auth_server.url, created=time.time()), config)
    monkeypatch.setenv("SENTSWEEP_CACHE", str(tmp_path / "cache"))

    for argv in (["sync", str(sweep_dir)], ["compare", "--tracking-uri", auth_server.url]):
        capsys.readouterr()
        status = main(argv)
        err = capsys.readouterr().err
        assert status == 2, err
        assert err.strip().splitlines() == [_refused_line(argv[0], auth_server.url)]


def test_the_check_refuses_a_missing_or_wrong_login_as_the_sweep_would(auth_server, monkeypatch) -> None:
    """``--check`` asks the server with this process's login: none, or a wrong password, is the one line a sweep
    would stop on (naming ``tracking.uri``, never the password); the right login passes."""
    from sentsweep.errors import ConfigError
    from sentsweep.platform.driver.preflight import check_tracking

    for name in ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=r"asks for a login \(HTTP 401\)") as err:
        check_tracking(auth_server.url, source="sweep.yaml")
    assert err.value.field == "tracking.uri" and err.value.file == "sweep.yaml"
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "wrong-password-123")
    with pytest.raises(ConfigError, match=r"refused the login in \$MLFLOW_TRACKING_USERNAME \(HTTP 401\)") as err:
        check_tracking(auth_server.url)
    assert "wrong-password-123" not in str(err.value)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", SECRET)
    check_tracking(auth_server.url)
