"""The cluster client's library parts, no Ray: staging, opt-in environment forwarding, masking, the Ray token's
sources, addresses, the job specs (entrypoints, runtime environments, driver placement, summaries) and the
portability warnings of a shipped config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sentsweep.cluster.client import resolve_address
from sentsweep.cluster.credentials import (
    AuthenticationRequired,
    RayToken,
    auth_failure,
    find_token,
    forwarded_env,
    held_back,
    masked,
    plaintext_token_warning,
)
from sentsweep.cluster.jobspec import (
    DRIVER_RESOURCES,
    JobOptions,
    build_resume_job,
    build_sweep_job,
    parse_driver_resources,
    prepare_config,
    stage_working_dir,
)
from sentsweep.credentials import mask_uri, redact, split_uri
from sentsweep.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "configs" / "demo.yaml"


def test_staging_keeps_sources_and_data_and_drops_excludes(tmp_path: Path) -> None:
    package = tmp_path / "proj" / "sentsweep"
    for name in ("__init__.py", "cli/__init__.py", "platform/driver/sweep.py", "data/sample/stsb/dev.tsv"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("x\n")
    for junk in ("__pycache__/tables.cpython-311.pyc", "platform/__pycache__/sweep.cpython-311.pyc", "cache.db",
                 "mlruns/0/meta.yaml", "ray_results/exp/state.json", ".pytest_cache/v", "mlruns.db",
                 "old.pyc", "mlartifacts/a.bin"):
        (package / junk).parent.mkdir(parents=True, exist_ok=True)
        (package / junk).write_text("junk\n")
    root = package.parent
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / "constraints.txt").write_text("torch==2.13.0\n")
    for junk in (".venv/bin/python", "runs/a/best.bin", "sentsweep.egg-info/PKG-INFO", "tests/test_x.py"):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_text("junk\n")
    prepared = prepare_config(DEMO, ["num_samples=3"], storage=str(tmp_path / "shared"), check_trials=False)

    staged = stage_working_dir(tmp_path / "job", config=prepared, package_dir=package, project_dir=root)

    assert set(staged.files) == {
        "sentsweep/__init__.py", "sentsweep/cli/__init__.py", "sentsweep/platform/driver/sweep.py",
        "sentsweep/data/sample/stsb/dev.tsv", "pyproject.toml", "constraints.txt", "configs/demo.yaml",
    }
    assert staged.config_path == "configs/demo.yaml"
    shipped = yaml.safe_load((tmp_path / "job" / "configs" / "demo.yaml").read_text())
    assert shipped["num_samples"] == 3 and shipped["storage_path"] == str(tmp_path / "shared")
    assert staged.size == sum(p.stat().st_size for p in (tmp_path / "job").rglob("*") if p.is_file())


def test_staging_the_checkout_is_small_and_importable(tmp_path: Path) -> None:
    staged = stage_working_dir(tmp_path / "job")
    assert staged.size < 20 * 2**20
    assert {"sentsweep/cli/__main__.py", "sentsweep/cluster/jobspec.py", "pyproject.toml"} <= set(staged.files)
    assert any(f.startswith("sentsweep/data/sample/") for f in staged.files)
    assert not any("__pycache__" in f or f.endswith(".pyc") or ".egg-info" in f for f in staged.files)
    assert not any(f.startswith(("tests/", ".venv/", "mlruns", "ray_results/")) for f in staged.files)
    probe = subprocess.run([sys.executable, "-c", "import sentsweep.cli, sys; print(sentsweep.cli.__file__)"],
                           cwd=staged.path, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(staged.path)})
    assert Path(probe.stdout.strip()).resolve().is_relative_to(staged.path.resolve())


def test_nothing_is_forwarded_unless_named() -> None:
    environ = {"MLFLOW_TRACKING_PASSWORD": "pw-1234", "AWS_ACCESS_KEY_ID": "AKIA", "AWS_REGION": "",
               "HOME": "/root", "PATH": "/bin", "MY_TOKEN": "tok-5678", "RAY_AUTH_TOKEN": "ray-tok-9"}
    assert forwarded_env(environ) == {}
    assert held_back(environ, {}) == ["MLFLOW_TRACKING_PASSWORD", "AWS_ACCESS_KEY_ID", "RAY_AUTH_TOKEN"]
    chosen = forwarded_env(environ, ["AWS_ACCESS_KEY_ID", "MY_TOKEN"], ["MODE=fast"])
    assert chosen == {"AWS_ACCESS_KEY_ID": "AKIA", "MY_TOKEN": "tok-5678", "MODE": "fast"}
    assert held_back(environ, chosen) == ["MLFLOW_TRACKING_PASSWORD", "RAY_AUTH_TOKEN"]
    with pytest.raises(ConfigError, match="UNSET is not set"):
        forwarded_env(environ, ["UNSET"])
    with pytest.raises(ConfigError, match="not a variable name"):
        forwarded_env(environ, ["1BAD"])
    with pytest.raises(ConfigError, match="has no value"):
        forwarded_env(environ, values=["MY_TOKEN"])
    for forward, values in ((["RAY_AUTH_TOKEN"], []), ([], ["RAY_AUTH_TOKEN_PATH=/x"])):
        with pytest.raises(ConfigError, match="never forwarded"):
            forwarded_env(environ, forward, values)


def test_a_local_secret_reaches_the_job_spec_only_when_named(tmp_path: Path) -> None:
    environ = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-local"}
    prepared = prepare_config(DEMO, storage="s3://b/p", tracking_uri="http://mlflow:5000", check_trials=False)
    plain = build_sweep_job(prepared, JobOptions(ship="installed", env=forwarded_env(environ)), tmp_path / "a")
    assert "AWS_SECRET_ACCESS_KEY" not in plain.runtime_env.get("env_vars", {})
    assert "wJalrXUtnFEMI-local" not in repr(plain.runtime_env)
    named = build_sweep_job(prepared, JobOptions(ship="installed", env=forwarded_env(
        environ, ["AWS_SECRET_ACCESS_KEY"])), tmp_path / "b")
    assert named.runtime_env["env_vars"]["AWS_SECRET_ACCESS_KEY"] == "wJalrXUtnFEMI-local"
    assert "AWS_SECRET_ACCESS_KEY=***" in "\n".join(named.summary)
    assert "wJalrXUtnFEMI-local" not in "\n".join(named.summary) + repr(named)


def test_the_ray_token_is_found_where_ray_looks_and_never_shown(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "given").write_text("tok-from-file\n")
    (tmp_path / "path").write_text("tok-from-path")
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("tok-default")
    env = {"RAY_AUTH_TOKEN": "tok-from-env", "RAY_AUTH_TOKEN_PATH": str(tmp_path / "path")}
    assert find_token(tmp_path / "given", env).value == "tok-from-file"  # --token-file first
    assert find_token(None, env).value == "tok-from-env"
    assert find_token(None, {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "path")}).value == "tok-from-path"
    assert find_token(None, {}) is None  # the default file only in token mode, as Ray
    token = find_token(None, {"RAY_AUTH_MODE": "token"})
    assert token is not None and token.value == "tok-default"
    assert token.headers() == {"Authorization": "Bearer tok-default"} and "tok-default" not in repr(token)
    for bad in ({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")}, {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "empty")}):
        (tmp_path / "empty").write_text("")
        with pytest.raises(AuthenticationRequired, match="^authentication required: .*token file"):
            find_token(None, bad)
    for status in (401, 403):  # a token sent and answered 401 (by a proxy in front of Ray) was refused too
        refused = str(auth_failure(status, "http://h:8265", token))
        assert refused.startswith("authentication required:") and "refused" in refused and "tok-default" not in refused
    assert "requires a token" in str(auth_failure(401, "http://h:8265", None))


def test_a_token_bound_for_plain_http_off_this_machine_and_cluster_is_warned_about() -> None:
    token = RayToken("tok-secret", "$RAY_AUTH_TOKEN")
    warned = plaintext_token_warning("http://ray.example.com:8265", token)
    assert warned is not None and "unencrypted to http://ray.example.com:8265" in warned and "tok-secret" not in warned
    assert plaintext_token_warning("10.0.3.7:8265", token) is not None  # no scheme: Ray's SDK takes http
    assert plaintext_token_warning("http://[fd00::7]:8265", token) is not None  # an address without a dot
    for quiet in ("http://127.0.0.1:8265", "http://localhost:8265", "http://[::1]:8265",  # a port-forward
                  "http://raycluster-head-svc:8265", "http://head-svc.sentsweep.svc:8265",  # in the cluster
                  "http://head-svc.sentsweep.svc.cluster.local:8265", "https://ray.example.com"):
        assert plaintext_token_warning(quiet, token) is None, quiet
    assert plaintext_token_warning("http://ray.example.com:8265", None) is None  # nothing to leak


def test_driver_placement_is_asked_for_only_when_given(tmp_path: Path) -> None:
    prepared = prepare_config(DEMO, storage="s3://b/p", tracking_uri="http://mlflow:5000", check_trials=False)
    anywhere = build_sweep_job(prepared, JobOptions(ship="installed"), tmp_path / "a")
    assert (anywhere.placement["entrypoint_num_cpus"], anywhere.placement["entrypoint_resources"]) == (None, None)
    assert "any node, the head included" in "\n".join(anywhere.summary)
    placed = build_sweep_job(prepared, JobOptions(ship="installed", entrypoint_num_cpus=1.0,
                                                  entrypoint_resources=parse_driver_resources('{"sweep_driver": 1}')),
                             tmp_path / "b")
    assert (placed.placement["entrypoint_num_cpus"], placed.placement["entrypoint_resources"]) == (
        1.0, {"sweep_driver": 1.0})
    assert "a node that offers sweep_driver (not the head)" in "\n".join(placed.summary)
    for bad, message in (("{", "not JSON"), ('{"sweep_driver": 0}', "positive"), ('{"CPU": 1}', "not a custom"),
                         ("[]", "JSON object")):
        with pytest.raises(ConfigError, match=message):
            parse_driver_resources(bad)


def test_the_default_driver_resource_is_offered_by_the_k8s_cpu_workers_only() -> None:
    cluster = yaml.safe_load((REPO / "k8s" / "base" / "raycluster.yaml").read_text())
    head = cluster["spec"]["headGroupSpec"]["rayStartParams"]
    groups = {g["groupName"]: g["rayStartParams"] for g in cluster["spec"]["workerGroupSpecs"]}
    offered = json.loads(yaml.safe_load(groups["cpu"]["resources"]))  # '"{\"sweep_driver\": 1}"'
    assert set(DRIVER_RESOURCES) <= set(offered) and all(offered[k] >= v for k, v in DRIVER_RESOURCES.items())
    assert "sweep_driver" not in str(head.get("resources", ""))


def test_masking_shows_names_never_values() -> None:
    env = {"MLFLOW_TRACKING_PASSWORD": "hunter22", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI"}
    shown = masked(env)
    assert shown == "AWS_SECRET_ACCESS_KEY=***, MLFLOW_TRACKING_PASSWORD=***"
    assert masked({}) == "(none)"
    assert mask_uri("https://alice:hunter22@mlflow.example:5000/x") == "https://alice:***@mlflow.example:5000/x"
    assert mask_uri("sqlite:////tmp/m.db") == "sqlite:////tmp/m.db"
    assert split_uri("http://alice:p%40ss@mlflow:5000", "tracking") == (
        "http://mlflow:5000", {"MLFLOW_TRACKING_USERNAME": "alice", "MLFLOW_TRACKING_PASSWORD": "p@ss"})
    assert split_uri("http://mlflow:5000", "tracking") == ("http://mlflow:5000", {})
    assert redact("user hunter22 key wJalrXUtnFEMI ok", env.values()) == "user *** key *** ok"


def test_address_comes_from_flag_then_environment() -> None:
    assert resolve_address("http://h:1", {"RAY_ADDRESS": "http://e:2"}) == "http://h:1"
    assert resolve_address(None, {"RAY_ADDRESS": "http://e:2"}) == "http://e:2"
    assert resolve_address(None, {"RAY_API_SERVER_ADDRESS": "http://a:3", "RAY_ADDRESS": "http://e:2"}) == \
        "http://a:3"
    assert resolve_address(None, {}) == "http://127.0.0.1:8265"


def test_sweep_job_bakes_options_into_the_config_and_forwards_only_what_is_named(tmp_path: Path) -> None:
    prepared = prepare_config(DEMO, ["num_samples=3"], storage="s3://sweeps/demo",
                              storage_endpoint_url="http://minio:9000",
                              tracking_uri="http://mlflow:5000", check_trials=False)
    options = JobOptions(installer="pip", env={"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI"}, finalize=False)
    spec = build_sweep_job(prepared, options, tmp_path / "job")

    assert spec.entrypoint == "python -m sentsweep.cli sweep configs/demo.yaml --no-finalize"
    env = spec.runtime_env
    assert env["working_dir"] == str(tmp_path / "job")
    assert env["env_vars"] == {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI", "MLFLOW_TRACKING_URI": "http://mlflow:5000"}
    assert "torch==2.13.0" in env["pip"]["packages"] and any(p.startswith("ray[") for p in env["pip"]["packages"])
    shipped = yaml.safe_load((tmp_path / "job" / "configs" / "demo.yaml").read_text())
    assert shipped["num_samples"] == 3 and shipped["storage_path"] == "s3://sweeps/demo"
    assert shipped["storage_endpoint_url"] == "http://minio:9000"
    assert shipped["tracking"] == {**yaml.safe_load(DEMO.read_text())["tracking"], "uri": "http://mlflow:5000"}
    summary = "\n".join(spec.summary)
    assert "wJalrXUtnFEMI" not in summary and "wJalrXUtnFEMI" not in repr(spec)
    assert "AWS_SECRET_ACCESS_KEY=***" in summary
    assert spec.metadata["sweep"] == "demo-cosent" and spec.metadata["config"] == "demo.yaml"
    assert spec.warnings == []


SLASHED = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # an AWS secret key's '/' left unencoded


@pytest.mark.parametrize(("options", "sets", "field", "secret"), [
    ({"tracking_uri": "http://alice:hunter22@mlflow:5000"}, [], "option '--tracking-uri'", "hunter22"),
    ({"tracking_uri": "postgresql://u:PGSECRET@db/mlflow"}, [], "option '--tracking-uri'", "PGSECRET"),
    ({"tracking_uri": "https://alice-login@mlflow:5000"}, [], "option '--tracking-uri'", "alice-login"),
    ({"storage": "s3://AKIAX:SECRETKEY@bucket/p"}, [], "option '--storage'", "SECRETKEY"),
    ({"storage": f"s3://AKIAX:{SLASHED}@bucket/p"}, [], "option '--storage'", SLASHED),
    ({"storage": "s3://b/p", "storage_endpoint_url": "http://AK:SK2222@minio:9000"}, [],
     "option '--storage-endpoint-url'", "SK2222"),
    ({}, ["tracking.uri=http://alice:hunter22@mlflow:5000"], "demo.yaml: field 'tracking.uri'", "hunter22"),
    ({}, [f"tracking.artifact_location=s3://AK:{SLASHED}@bucket/a"], "field 'tracking.artifact_location'", SLASHED),
    ({}, ["warm_start=s3://AK:WARMSECRET@bucket/old"], "field 'warm_start'", "WARMSECRET"),
    ({}, ["storage_path=s3://AK:PATHSECRET@bucket/p"], "field 'storage_path'", "PATHSECRET"),
])
def test_a_credential_in_a_submitted_config_is_refused_without_echoing_it(
        options: dict[str, str], sets: list[str], field: str, secret: str) -> None:
    with pytest.raises(ConfigError) as caught:
        prepare_config(DEMO, sets, check_trials=False, **options)
    message = str(caught.value)
    assert field in message and "a submitted sweep carries no credential" in message and "--forward-env" in message
    assert secret not in message and "\n" not in message


def test_a_credential_outside_the_uri_fields_of_a_submitted_config_names_its_file() -> None:
    with pytest.raises(ConfigError, match=r"demo\.yaml: field 'data_dir': carries a login") as caught:
        prepare_config(DEMO, ["data_dir=s3://AK:never-shown@b/data"], check_trials=False)
    assert "never-shown" not in str(caught.value)


def test_the_reviewed_case_fails_on_its_first_credential_and_a_database_user_stays(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="carries no credential") as caught:
        prepare_config(DEMO, storage="s3://AKIAX:SECRETKEY@bucket/p",
                       storage_endpoint_url="http://AK:SK2222@minio:9000",
                       tracking_uri="postgresql://u:PGSECRET@db/mlflow", check_trials=False)
    assert all(s not in str(caught.value) for s in ("SECRETKEY", "SK2222", "PGSECRET"))
    prepared = prepare_config(DEMO, storage="s3://b/p", tracking_uri="postgresql://u@db/mlflow", check_trials=False)
    spec = build_sweep_job(prepared, JobOptions(ship="installed"), tmp_path / "job")
    assert "postgresql://u@db/mlflow" in prepared.text and "env_vars" not in spec.runtime_env


@pytest.mark.parametrize(("sweep_dir", "endpoint", "field", "secret"), [
    ("s3://AK:RESUMESECRET@sweeps/demo/s-1", None, "--resume", "RESUMESECRET"),
    (f"s3://AK:{SLASHED}@sweeps/demo/s-1", None, "--resume", SLASHED),
    ("s3://sweeps/demo/s-1", "http://AK:ENDSECRET@minio:9000", "--storage-endpoint-url", "ENDSECRET"),
])
def test_a_resumed_job_refuses_a_credential_in_its_entrypoint(tmp_path: Path, sweep_dir: str, endpoint: str | None,
                                                               field: str, secret: str) -> None:
    with pytest.raises(ConfigError, match=f"option '{field}': a submitted sweep carries no credential") as caught:
        build_resume_job(sweep_dir, JobOptions(ship="installed"), tmp_path / "r", storage_endpoint_url=endpoint)
    assert secret not in str(caught.value) and not (tmp_path / "r").exists()  # refused before anything is staged


def test_installed_and_resume_jobs(tmp_path: Path) -> None:
    prepared = prepare_config(DEMO, storage="/shared/sweeps", tracking_uri="http://mlflow:5000",
                              check_trials=False)
    installed = build_sweep_job(prepared, JobOptions(ship="installed"), tmp_path / "a")
    assert installed.runtime_env["working_dir"] == str(tmp_path / "a")
    assert [p.relative_to(tmp_path / "a").as_posix() for p in (tmp_path / "a").rglob("*") if p.is_file()] == \
        ["configs/demo.yaml"]
    assert "image_uri" not in installed.runtime_env
    resume = build_resume_job("s3://sweeps/demo/demo-cosent-1-ab12", JobOptions(ship="installed"), tmp_path / "c",
                              storage_endpoint_url="http://minio:9000")
    assert resume.entrypoint == ("python -m sentsweep.cli resume s3://sweeps/demo/demo-cosent-1-ab12 "
                                 "--storage-endpoint-url http://minio:9000")
    assert "working_dir" not in resume.runtime_env and resume.metadata["sweep"] == "demo-cosent-1-ab12"
    assert "env_vars" not in resume.runtime_env  # the cluster's $MLFLOW_TRACKING_URI (every Ray pod sets it)
    named = build_resume_job("s3://sweeps/demo/demo-cosent-1-ab12", JobOptions(ship="installed"), tmp_path / "e",
                             tracking_uri="http://mlflow.team-b:5000")  # the server the folder must name
    assert named.runtime_env["env_vars"] == {"MLFLOW_TRACKING_URI": "http://mlflow.team-b:5000"}
    with pytest.raises(ConfigError, match="option '--tracking-uri': a submitted sweep carries no credential"):
        build_resume_job("s3://sweeps/demo/x-1", JobOptions(), tmp_path / "f", tracking_uri="http://u:PW@mlflow:5000")
    with pytest.raises(ConfigError, match="--resume"):
        build_resume_job("runs/x", JobOptions(), tmp_path / "d")


def test_relative_storage_and_tracking_are_warned_about() -> None:
    warnings = prepare_config(DEMO, check_trials=False).warnings
    assert any("storage_path './ray_results' is relative" in w for w in warnings)
    assert any("tracking uri 'sqlite:///mlruns.db' is relative" in w for w in warnings)
    assert any("artifact_location './mlartifacts' is relative" in w for w in warnings)
    server = prepare_config(DEMO, storage="s3://b/p", tracking_uri="http://mlflow:5000", check_trials=False)
    assert server.warnings == []  # the server decides where the artifacts go
