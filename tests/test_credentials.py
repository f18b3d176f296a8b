"""sentsweep.credentials: user-info split off URIs into the standard variables, where the sweep config is
resolved; masks on everything shown. The end-to-end grep is tests/platform/test_no_credentials_written.py."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import PERMISSION_DENIED, RESOURCE_DOES_NOT_EXIST, UNAUTHENTICATED

from sentsweep.cli import main
from sentsweep.credentials import (
    MASK,
    SECRET_ENV,
    explain_refused_credentials,
    mask_text,
    mask_uri,
    masked_output,
    secret_values,
    split_uri,
)
from sentsweep.errors import ConfigError
from sentsweep.platform.config import SweepConfig, joins_ray_cluster, resolve_sweep_folder

SECRET = "hunter2hunter2"


@pytest.mark.parametrize(("uri", "kind", "clean", "found"), [
    ("http://alice:p%40ss@mlflow:5000/x", "tracking", "http://mlflow:5000/x",
     {"MLFLOW_TRACKING_USERNAME": "alice", "MLFLOW_TRACKING_PASSWORD": "p@ss"}),
    ("https://bob@mlflow.example", "tracking", "https://mlflow.example", {"MLFLOW_TRACKING_USERNAME": "bob"}),
    ("postgresql+psycopg2://u:p%2Fq@db:5432/mlflow", "tracking", "postgresql+psycopg2://u@db:5432/mlflow",
     {"PGPASSWORD": "p/q"}),
    ("s3://AKIA:wJal%2Fr@bucket/runs", "storage", "s3://bucket/runs",
     {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "wJal/r"}),
    ("http://AKIA:wJalr@minio:9000", "storage", "http://minio:9000",
     {"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "wJalr"}),
    ("http://[::1]:5000", "tracking", "http://[::1]:5000", {}),
    ("sqlite:////tmp/mlruns.db", "tracking", "sqlite:////tmp/mlruns.db", {}),
    ("./ray_results", "storage", "./ray_results", {}),
])
def test_split_uri(uri: str, kind, clean: str, found: dict[str, str]) -> None:
    assert split_uri(uri, kind) == (clean, found)


def test_a_password_no_standard_variable_carries_is_refused_masked() -> None:
    with pytest.raises(ConfigError, match=r"tracking\.uri.*mysql://u:\*\*\*@h/db") as caught:
        split_uri(f"mysql://u:{SECRET}@h/db", "tracking", "tracking.uri")
    assert SECRET not in str(caught.value)


SLASHED = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # an AWS secret key, its '/' not percent-encoded


@pytest.mark.parametrize(("uri", "kind"), [
    (f"s3://AKIAEXAMPLE:{SLASHED}@bucket/prefix", "storage"),
    (f"http://AKIAEXAMPLE:{SLASHED}@minio:9000", "storage"),
    ("http://alice:pa/ss@mlflow", "tracking"),
    ("postgresql://u:pa/ss@db/mlflow", "tracking"),
    ("http://alice:pa?ss@mlflow", "tracking"),
])
def test_a_password_with_an_unencoded_slash_is_refused_masked(uri: str, kind) -> None:
    secret = uri.split("://", 1)[1].split(":", 1)[1].rsplit("@", 1)[0]
    with pytest.raises(ConfigError, match=r"^field 'storage_path': .*percent-encode the password") as caught:
        split_uri(uri, kind, "storage_path")
    assert secret not in str(caught.value) and "\n" not in str(caught.value)
    assert secret not in mask_uri(uri) and f"{MASK}@" in mask_uri(uri)


@pytest.mark.parametrize("uri", [
    "http://mlflow:5000/ajax-api/runs@v2", "https://github.com/org/repo@v1", "http://[::1]:5000/x@y",
    "git+ssh://git@github.com/org/repo@v1", "s3://bucket/a@b/c", "http://mlflow:5000/x/y@z",
])
def test_an_at_in_a_path_is_no_password(uri: str) -> None:
    assert mask_uri(uri) == uri
    assert split_uri(uri, "storage") == (uri, {})


def test_resolving_moves_credentials_into_the_environment(tmp_path: Path) -> None:
    config = SweepConfig(name="s", method="cosent", tracking={"uri": f"http://alice:{SECRET}@mlflow:5000"},
                         storage_path=f"s3://AKIA:{SECRET}x@bucket/runs",
                         storage_endpoint_url=f"http://AKIA:{SECRET}x@minio:9000")
    env: dict[str, str] = {"MLFLOW_TRACKING_USERNAME": "alice"}  # the same value: no clash
    resolved = config.resolved(tmp_path, environ=env)
    assert (resolved.tracking.uri, resolved.storage_path, resolved.storage_endpoint_url) == (
        "http://mlflow:5000", "s3://bucket/runs", "http://minio:9000")
    assert env == {"MLFLOW_TRACKING_USERNAME": "alice", "MLFLOW_TRACKING_PASSWORD": SECRET,
                   "AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": f"{SECRET}x"}
    assert SECRET not in resolved.to_yaml() + resolved.model_dump_json() + repr(resolved)
    again = dict(env)
    assert resolved.resolved(tmp_path, environ=again) == resolved and again == env
    assert resolved.resolved(tmp_path, environ={})._credential_env == {
        "MLFLOW_TRACKING_USERNAME": "tracking.uri", "MLFLOW_TRACKING_PASSWORD": "tracking.uri",
        "AWS_ACCESS_KEY_ID": "storage_path", "AWS_SECRET_ACCESS_KEY": "storage_path"}


def test_credentials_given_twice_differently_are_one_clear_error(tmp_path: Path) -> None:
    config = SweepConfig(name="s", method="cosent", tracking={"uri": f"http://alice:{SECRET}@mlflow:5000"})
    env = {"MLFLOW_TRACKING_PASSWORD": "another-password"}
    with pytest.raises(ConfigError, match=r"field 'tracking\.uri': its user-info and \$MLFLOW_TRACKING_PASSWORD "
                                          "differ") as caught:
        config.resolved(tmp_path, environ=env)
    assert env == {"MLFLOW_TRACKING_PASSWORD": "another-password"} and SECRET not in str(caught.value)
    both = SweepConfig(name="s", method="cosent", storage_path="s3://K1:S@bucket/x",
                       storage_endpoint_url="http://K2:S@minio:9000")
    with pytest.raises(ConfigError, match=r"storage_endpoint_url.*differs from the one in 'storage_path'"):
        both.resolved(tmp_path, environ={})


def test_a_resumed_folder_and_endpoint_lose_their_credentials_too() -> None:
    env: dict[str, str] = {}
    assert resolve_sweep_folder("s3://K:S3CRET@bucket/runs/s-1", "http://K:S3CRET@minio:9000", env) == (
        "s3://bucket/runs/s-1", "http://minio:9000")
    assert env == {"AWS_ACCESS_KEY_ID": "K", "AWS_SECRET_ACCESS_KEY": "S3CRET"}
    assert resolve_sweep_folder("/data/runs/s-1", None, env) == ("/data/runs/s-1", None)


def test_only_a_joined_cluster_gets_the_storage_credentials_and_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tracking server's never: the driver alone writes to MLflow."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for name in ("MLFLOW_TRACKING_PASSWORD", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "")  # unset, and restored after the test
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "minio")
    config = SweepConfig(name="s", method="cosent", tracking={"uri": f"http://:{SECRET}@mlflow:5000"},
                         storage_path="s3://bucket/runs", storage_endpoint_url=f"http://:{SECRET}@minio:9000")
    resolved = config.resolved(tmp_path)  # this process's environment
    assert resolved.worker_credentials(None) == {} and resolved.worker_credentials("local") == {}
    # the secret key came from the URI and would travel (readable through Ray's Jobs API): refused unless asked
    with pytest.raises(ConfigError) as refused:
        resolved.worker_credentials("ray://head:10001")
    assert str(refused.value).startswith("field 'storage_endpoint_url': the credentials taken off the config's URIs "
                                         "(AWS_SECRET_ACCESS_KEY) would reach")
    assert "--forward-credentials" in str(refused.value) and SECRET not in str(refused.value)
    # the access key was in the environment already and stays; the tracking password never travels
    assert resolved.worker_credentials("ray://head:10001", forward=True) == {"AWS_SECRET_ACCESS_KEY": SECRET}
    monkeypatch.setenv("RAY_ADDRESS", "http://head:8265")  # a Ray job's driver
    assert joins_ray_cluster(None) and resolved.worker_credentials(None, forward=True) == {
        "AWS_SECRET_ACCESS_KEY": SECRET}
    with pytest.raises(ConfigError):
        resolved.worker_credentials(None)
    tracking_only = SweepConfig(name="s", method="cosent", tracking={"uri": f"http://:{SECRET}@mlflow:5000"})
    assert tracking_only.resolved(tmp_path).worker_credentials("ray://head:10001") == {}  # nothing to send


def test_masks() -> None:
    assert mask_uri("https://alice:hunter22@mlflow.example:5000/x") == "https://alice:***@mlflow.example:5000/x"
    assert mask_uri("http://a:b@c@host/x and http://host:5000/y") == "http://a:***@host/x and http://host:5000/y"
    assert mask_uri(f"s3://K:{SLASHED}@bucket/x, http://u:pa/ss@mlflow:5000/runs/1@v2 and http://h:5000/p@q") == (
        "s3://K:***@bucket/x, http://u:***@mlflow:5000/runs/1@v2 and http://h:5000/p@q")
    # a bare user name may be a token; a database's user name is no secret
    shown = f"https://{SECRET}@mlflow.example/x, s3://AKIAKEY@bucket and postgresql+psycopg2://sweeps@db/m"
    assert mask_uri(shown) == (
        "https://***@mlflow.example/x, s3://***@bucket and postgresql+psycopg2://sweeps@db/m")
    text = f"see postgresql://u:pw@db/m; key {SECRET}; ok"
    assert mask_text(text, [SECRET, "abc"]) == "see postgresql://u:***@db/m; key ***; ok"
    assert secret_values({"MLFLOW_TRACKING_PASSWORD": SECRET, "MLFLOW_TRACKING_USERNAME": "alice"}) == [SECRET]


def test_the_ray_and_hub_tokens_are_masked_and_still_never_forwarded() -> None:
    from sentsweep.cluster.credentials import CREDENTIAL_ENV, forwarded_env
    from sentsweep.credentials import RAY_TOKEN_ENV

    assert {RAY_TOKEN_ENV, "HF_TOKEN"} <= set(SECRET_ENV) & set(CREDENTIAL_ENV)
    env = {"RAY_AUTH_TOKEN": f"ray-{SECRET}", "HF_TOKEN": f"hf_{SECRET}"}
    assert mask_text(f"token ray-{SECRET}, hub hf_{SECRET}", secret_values(env)) == "token ***, hub ***"
    with pytest.raises(ConfigError, match="never forwarded"):
        forwarded_env(env, ["RAY_AUTH_TOKEN"])
    assert forwarded_env(env, ["HF_TOKEN"]) == {"HF_TOKEN": f"hf_{SECRET}"}  # named: it goes


def test_the_older_names_of_the_hub_and_session_tokens_and_the_databricks_token_are_masked_and_held_back() -> None:
    """huggingface_hub still reads ``HUGGING_FACE_HUB_TOKEN`` when ``HF_TOKEN`` is unset, botocore
    ``AWS_SECURITY_TOKEN`` beside ``AWS_SESSION_TOKEN``, and MLflow ``DATABRICKS_TOKEN`` for a ``databricks``
    tracking URI: their values are secrets too."""
    from sentsweep.cluster.credentials import CREDENTIAL_ENV, held_back

    env = {"HUGGING_FACE_HUB_TOKEN": f"hf_{SECRET}", "AWS_SECURITY_TOKEN": f"sec-{SECRET}",
           "DATABRICKS_TOKEN": f"dapi{SECRET}"}
    assert mask_text(f"hub hf_{SECRET}, aws sec-{SECRET}, dbx dapi{SECRET}", secret_values(env)) \
        == "hub ***, aws ***, dbx ***"
    assert set(env) <= set(CREDENTIAL_ENV) and held_back(env, {}) == sorted(env, key=CREDENTIAL_ENV.index)


def test_masked_output_covers_prints_logs_and_restores() -> None:
    before = (sys.stdout, sys.stderr, logging.getLogRecordFactory(), sys.excepthook)
    sink = io.StringIO()
    logger = logging.getLogger("test_credentials.early")  # a handler made before, on a stream of its own
    handler = logging.StreamHandler(sink)
    logger.addHandler(handler)
    try:
        out = io.StringIO()
        sys.stdout = out
        with masked_output({"AWS_SECRET_ACCESS_KEY": SECRET}):
            print(f"uri http://u:{SECRET}@h:1 and {SECRET}")
            logger.warning("key %s at %s", SECRET, "http://u:pw@h")
        sys.stdout = before[0]
        assert out.getvalue() == "uri http://u:***@h:1 and ***\n"
        assert sink.getvalue() == "key *** at http://u:***@h\n"
    finally:
        sys.stdout = before[0]
        logger.removeHandler(handler)
    assert (sys.stdout, sys.stderr, logging.getLogRecordFactory(), sys.excepthook) == before


def test_a_traceback_ending_the_process_is_masked(tmp_path: Path) -> None:
    code = ("from sentsweep.credentials import masked_output\n"
            "with masked_output({}):\n"
            f"    raise RuntimeError('cannot reach http://u:{SECRET}@h:1')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 1 and "RuntimeError: cannot reach http://u:***@h:1" in done.stderr
    assert SECRET not in done.stderr


@pytest.mark.parametrize(("code", "expected"), [
    (UNAUTHENTICATED, "asks for a login (HTTP 401): set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"),
    (PERMISSION_DENIED, "refused the login in $MLFLOW_TRACKING_USERNAME (HTTP 403)"),
])
def test_a_refused_login_is_one_line_naming_the_variables(code: int, expected: str) -> None:
    with pytest.raises(ConfigError) as caught, explain_refused_credentials("http://mlflow:5000"):
        raise MlflowException("API request failed", error_code=code)
    assert str(caught.value).startswith("the tracking server http://mlflow:5000 ") and expected in str(caught.value)
    with pytest.raises(MlflowException), explain_refused_credentials("http://mlflow:5000"):
        raise MlflowException("no such run", error_code=RESOURCE_DOES_NOT_EXIST)


def test_the_cli_masks_its_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(f"name: s\nmethod: cosent\nstorage_path: ftp://K:{SECRET}@host/x\n")
    assert main(["sweep", str(config)]) == 2
    err = capsys.readouterr().err
    assert "'ftp://K:***@host/x': use a local folder" in err and SECRET not in err


def test_a_sweep_joining_a_cluster_refuses_uri_credentials_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "")  # unset, and restored after the test
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "sweep.yaml"
    config.write_text(f"name: s\nmethod: cosent\nstorage_path: {tmp_path / 'runs'}\n"
                      f"warm_start: 's3://alice:{SECRET}@bucket/earlier-sweep'\n")
    # the address is a closed port: reaching it (or the tracking server) would be another error
    assert main(["sweep", str(config), "--address", "ray://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sentsweep sweep: error: field 'warm_start': the credentials taken off the "
                          "config's URIs (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) would reach the cluster's "
                          "workers"), err
    assert len(err.splitlines()) == 1 and SECRET not in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_a_resume_given_a_config_with_uri_credentials_refuses_to_send_them_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--resume-interrupted`` resumes with the YAML's config: the credentials its URIs carry are the ones the
    workers would get (the stored config holds none), so a joined cluster refuses them without the flag."""
    from sentsweep.platform.driver.sweep import resume_sweep
    from sentsweep.platform.location import SweepManifest, new_sweep_location

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "")  # unset, and restored after the test
    given = SweepConfig(name="s", method="cosent", storage_path=str(tmp_path / "runs"),
                        warm_start=f"s3://alice:{SECRET}@bucket/earlier-sweep",
                        tracking={"uri": "http://127.0.0.1:9", "experiment": "e"})
    stored = given.resolved(tmp_path, environ={})  # what the first session stored: no credentials
    location = new_sweep_location(stored, now=1_700_000_000, suffix="abcd")
    location.write_manifest(SweepManifest(sweep_name=location.name, config=stored.model_dump(mode="json"),
                                          parent_run_id="0" * 32, experiment_id="1", tracking_uri=stored.tracking.uri,
                                          created=1_700_000_000), stored)
    with pytest.raises(ConfigError, match=r"\(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY\) would reach"):
        resume_sweep(location.uri, config=given, address="ray://127.0.0.1:9", preflight=False)
