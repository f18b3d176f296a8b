"""``sentsweep submit`` and ``sentsweep jobs``: user errors fail here with one line (no Ray), then the real
thing against a local Ray head (``ray start --head`` with its dashboard): a tiny CoSENT sweep submitted with
``--follow``, read back from MLflow, and a long job stopped.

Nothing is mocked: the head is Ray's own, started in its own process group and ended by that group; the job
runs the staged copy of this checkout on the head's Python (the test's virtual environment).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from sentsweep.cli import main
from sentsweep.cluster.client import TERMINAL, ClusterError, ClusterJobs
from sentsweep.cluster.credentials import RayToken
from tools.harness.processes import free_port
from tools.harness.ray_head import RayHead
from tools.harness.ray_head import ray_head as ray_head_process
from tools.harness.tcp_proxy import tcp_proxy

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "configs" / "demo.yaml"


def _run_cli(*argv: str) -> tuple[int, str, str]:
    """``sentsweep ARGV`` in this process; its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()



def test_config_mistakes_fail_here_with_the_field_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "never-shown-4321")
    status, out, err = _run_cli("submit", str(DEMO), "--dry-run", "--set", "num_sample=3")
    assert status == 2 and "error: --set: field 'num_sample'" in err  # a --set's mistake, not the file's
    status, out, err = _run_cli("submit", str(DEMO), "--dry-run", "--set", "fixed.max_step=3")
    assert status == 2 and "fixed.max_step" in err and "Traceback" not in err
    status, out, err = _run_cli("submit", "--dry-run")
    assert status == 2 and "--resume" in err
    status, out, err = _run_cli("submit", str(DEMO), "--dry-run", "--set", "num_samples=3",
                                "--storage", "s3://b/p", "--storage-endpoint-url", "http://minio:9000",
                                "--tracking-uri", "http://mlflow:5000")
    assert status == 0 and ": 3 trials of cosent" in out and "dry run: nothing submitted" in out
    status, out, err = _run_cli("submit", str(DEMO), "--dry-run", "--set", "stop_when=converged", "--storage",
                                "s3://b/p", "--tracking-uri", "http://mlflow:5000")
    assert status == 0 and "up to 8 trials of cosent" in out
    assert "not sent:    MLFLOW_TRACKING_PASSWORD (set here; --forward-env NAME sends one)" in out
    assert "never-shown-4321" not in out + err
    status, out, err = _run_cli("submit", str(DEMO), "--dry-run", "--storage", "s3://AK:a/b-never-shown@b/p")
    assert status == 2 and "option '--storage': a submitted sweep carries no credential" in err
    assert "never-shown" not in out + err and "Traceback" not in err
    status, out, err = _run_cli("submit", str(DEMO), "--dry-run", "--set", "data_dir=s3://AK:never-shown@b/data")
    assert status == 2 and "--set: field 'data_dir': carries a login in a URI's user-info" in err
    assert "never-shown" not in out + err and "Traceback" not in err


def test_local_credentials_stay_here_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-never-shown-8765")
    monkeypatch.setenv("SENTSWEEP_OWNER", "alice")
    base = ("submit", str(DEMO), "--dry-run", "--installed", "--storage", "s3://b/p", "--tracking-uri",
            "http://mlflow:5000")
    status, out, err = _run_cli(*base)
    assert status == 0 and "environment: MLFLOW_TRACKING_URI=***, SENTSWEEP_OWNER=***" in out
    assert "not sent:    AWS_SECRET_ACCESS_KEY" in out and "driver:      nothing: any node, the head included" in out
    status, out, err = _run_cli(*base, "--forward-env", "AWS_SECRET_ACCESS_KEY", "--driver-resources")
    assert status == 0 and "AWS_SECRET_ACCESS_KEY=***" in out and "not sent" not in out
    assert 'driver:      1 CPU + {"sweep_driver": 1.0}: a node that offers sweep_driver (not the head)' in out
    assert "aws-never-shown-8765" not in out + err
    status, out, err = _run_cli(*base, "--forward-env", "RAY_AUTH_TOKEN")
    assert status == 2 and "never forwarded" in err
    with pytest.raises(SystemExit):  # the option is gone: it needs podman, which the hardened pods lack
        _run_cli(*base, "--image", "x")


def test_an_unreachable_dashboard_is_one_line_naming_it() -> None:
    address = f"http://127.0.0.1:{free_port()}"
    for argv in (("jobs", "list"), ("jobs", "status", "raysubmit_x"), ("jobs", "logs", "x", "--follow")):
        status, out, err = _run_cli(*argv, "--address", address)
        assert status == 2 and "Traceback" not in err
        assert err.strip().count("\n") == 0 and f"cannot reach the Ray dashboard at {address}" in err
    with pytest.raises(ClusterError, match=address):
        ClusterJobs(address)


# -- a real Ray head ----------------------------------------------------------------------------------------------


@dataclass
class Head:
    """A head of :mod:`tools.harness.ray_head` and its jobs once the job agent accepts a (trivial) job."""

    head: RayHead
    _jobs: ClusterJobs | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        return self.head.address

    def jobs(self, timeout: float = 120.0) -> ClusterJobs:
        if self._jobs is None:
            self._jobs = _ready_jobs(self.head, timeout)
        return self._jobs


def _ready_jobs(head: RayHead, timeout: float) -> ClusterJobs:
    """The head's jobs (with its token, if any) once a trivial job runs to SUCCEEDED."""
    token = RayToken(head.token, "test") if head.token else None
    deadline = time.monotonic() + timeout
    while True:
        if head.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the Ray head did not start: {head.log.read_text()[-3000:]}")
        try:
            jobs = ClusterJobs(head.address, token=token)
            probe = jobs.client.submit_job(entrypoint="true")
        except (ClusterError, RuntimeError):  # "No available agent to submit job" while the agent starts
            time.sleep(0.5)
            continue
        assert jobs.wait(probe, timeout=60, poll=0.2) == "SUCCEEDED"
        return jobs


def _dashboard_missing() -> str | None:
    import ray._private.utils as ray_utils

    return ray_utils.get_dashboard_dependency_error()


def _stop_jobs(head: Head) -> None:
    if head._jobs is not None:
        with contextlib.suppress(Exception):
            for info in head._jobs.list():
                if info.submission_id and str(info.status.value) not in TERMINAL:
                    head._jobs.client.stop_job(info.submission_id)


@pytest.fixture(scope="module")
def ray_head() -> Iterator[Head]:
    """A local head with the dashboard on free loopback ports, 2 CPUs, started for this module and ended by
    its process group (only processes this fixture started), also when a test fails."""
    missing = _dashboard_missing()
    if missing:
        pytest.skip(f"the Ray dashboard needs ray[default] ({missing})")
    with ray_head_process(num_cpus=2) as started:
        head = Head(started)
        try:
            yield head
        finally:
            _stop_jobs(head)


@pytest.fixture(scope="module")
def token_head() -> Iterator[Head]:
    """A head started as Ray 2.60 documents token auth (RAY_AUTH_MODE=token, RAY_AUTH_TOKEN), 1 CPU."""
    missing = _dashboard_missing()
    if missing:
        pytest.skip(f"the Ray dashboard needs ray[default] ({missing})")
    with ray_head_process(num_cpus=1, token=f"test-{secrets.token_hex(24)}") as started:
        head = Head(started)
        try:
            yield head
        finally:
            _stop_jobs(head)


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_token_auth_with_and_without_the_token(token_head: Head, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from sentsweep.cluster.jobspec import JobSpec

    token, address = token_head.head.token, token_head.address
    assert token is not None
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token
    jobs = token_head.jobs()  # the project's client, with the token
    job_id = jobs.submit(JobSpec("python -c 'print(1)'", {}, {"kind": "probe"}, [], []), f"tiny-{secrets.token_hex(3)}")
    assert jobs.wait(job_id, timeout=60, poll=0.2) == "SUCCEEDED" and jobs.logs(job_id).splitlines()[-1] == "1"
    assert "RAY_AUTH_TOKEN" not in (jobs.info(job_id).runtime_env or {}).get("env_vars", {})
    shown: list[str] = []

    token_file = tmp_path / "ray.token"
    token_file.write_text(token + "\n")
    status, out, err = _run_cli("jobs", "list", "--address", address, "--token-file", str(token_file))
    assert status == 0 and job_id in out, err
    shown += [out, err]
    monkeypatch.setenv("RAY_AUTH_TOKEN", token)  # as Ray's SDK reads it
    status, out, err = _run_cli("jobs", "status", job_id, "--address", address)
    assert status == 0 and out.startswith(f"job {job_id}: SUCCEEDED"), err
    shown += [out, err]
    with contextlib.redirect_stdout(io.StringIO()) as help_text, pytest.raises(SystemExit):
        main(["submit", "--help"])
    shown.append(help_text.getvalue())
    monkeypatch.delenv("RAY_AUTH_TOKEN")

    submit = ("submit", str(DEMO), "--installed", "--storage", str(tmp_path / "shared"),
              "--tracking-uri", "http://mlflow:5000")
    for argv in (("jobs", "list"), ("jobs", "status", job_id), ("jobs", "logs", job_id, "--follow"), submit):
        status, out, err = _run_cli(*argv, "--address", address)
        assert status == 2 and "Traceback" not in err and err.count("\n") == 1, err
        assert f"error: authentication required: the Ray cluster at {address} requires a token" in err
    wrong = tmp_path / "wrong.token"
    wrong.write_text("not-the-cluster-token-0000")
    status, out, err = _run_cli("jobs", "list", "--address", address, "--token-file", str(wrong))
    assert status == 2 and err.count("\n") == 1
    assert f"authentication required: the Ray cluster at {address} refused the token from --token-file" in err
    status, out, err = _run_cli("jobs", "list", "--address", address, "--token-file", str(tmp_path / "none"))
    assert status == 2 and "authentication required: cannot read the Ray token file" in err
    assert all(token not in text for text in shown + [out, err])


def _sweep_yaml(path: Path, model: Path, name: str, **extra: Any) -> Path:
    """A tiny CoSENT sweep: 8 trials unless overridden, 4 steps, the bundled sample data, no plots/export."""
    config = {
        "name": name, "method": "cosent", "search_space": "cosent", "model": str(model), "num_samples": 8,
        "max_concurrent_trials": 2, "scheduler": {"type": "fifo"}, "seed": 0,
        "fixed": {"max_steps": 4, "eval_every": 2, "max_length": 32, "max_train_pairs": 64,
                  "max_dev_pairs": 40, "test_tasks": "stsb_test"},
        "storage_path": "./ray_results", "max_failures": 0, "plots": False, "export": False,
        "tracking": {"uri": "sqlite:///mlruns.db", "artifact_location": str(path.parent / "mlartifacts"),
                     "experiment": "submitted"},
        "final_tasks": "stsb_test",
        **extra,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _create_tracking_store(uri: str) -> None:
    from mlflow import MlflowClient

    MlflowClient(tracking_uri=uri).search_experiments()  # creates the schema (~10 s)


@dataclass
class SubmittedSweep:
    job_id: str
    status: int
    out: str
    err: str
    secrets: list[str]
    tracking_uri: str
    storage: Path
    seconds: float


@pytest.fixture(scope="module")
def sweep_job(ray_head: Head, tiny_bert_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> SubmittedSweep:
    """`sentsweep submit CONFIG --set num_samples=2 --storage ... --tracking-uri ... --no-finalize --follow`
    with fake credentials in the environment; the module's tests read what it did."""
    root = tmp_path_factory.mktemp("submitted")
    config = _sweep_yaml(root / "tiny.yaml", tiny_bert_dir, "submit-tiny")
    tracking_uri = f"sqlite:///{root / 'mlruns.db'}"
    started = time.monotonic()
    schema = threading.Thread(target=_create_tracking_store, args=(tracking_uri,))
    schema.start()  # while the head starts
    ray_head.jobs()
    schema.join()
    fake = [f"pw-{secrets.token_hex(8)}", f"aws-{secrets.token_hex(8)}"]
    job_id = f"sentsweep-test-{secrets.token_hex(4)}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLFLOW_TRACKING_PASSWORD", fake[0])
        patch.setenv("AWS_SECRET_ACCESS_KEY", fake[1])
        status, out, err = _run_cli(
            "submit", str(config), "--address", ray_head.address, "--set", "num_samples=2",
            "--forward-env", "MLFLOW_TRACKING_PASSWORD", "--forward-env", "AWS_SECRET_ACCESS_KEY",
            "--storage", str(root / "shared"), "--tracking-uri", tracking_uri, "--job-id", job_id, "--no-finalize",
            "--follow")
    seconds = time.monotonic() - started
    print(f"\nsubmitted sweep: {seconds:.1f}s from head start to job end")
    return SubmittedSweep(job_id, status, out, err, fake, tracking_uri, root / "shared", seconds)


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_submitted_sweep_succeeds_and_logs_to_mlflow(sweep_job: SubmittedSweep, ray_head: Head) -> None:
    from mlflow import MlflowClient

    from sentsweep.platform.location import MANIFEST
    from sentsweep.tracking.vocabulary import PARENT_TAG, ROLE_TAG, SWEEP_TAG

    assert sweep_job.status == 0, sweep_job.out[-3000:] + sweep_job.err[-3000:]
    assert f"submitted job {sweep_job.job_id} to {ray_head.address}" in sweep_job.out
    assert f"job {sweep_job.job_id} SUCCEEDED" in sweep_job.out
    assert "sweep submit-tiny-" in sweep_job.out  # the job's own log, streamed
    info = ray_head.jobs().info(sweep_job.job_id)
    assert info.runtime_env["working_dir"].startswith("gcs://")  # the staged checkout, uploaded
    assert info.entrypoint == "python -m sentsweep.cli sweep configs/tiny.yaml --no-finalize"
    assert info.metadata["sweep"] == "submit-tiny"

    client = MlflowClient(tracking_uri=sweep_job.tracking_uri)
    experiment = client.get_experiment_by_name("submitted")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get(ROLE_TAG) == "sweep"]
    assert parent.info.status == "FINISHED"
    assert parent.data.params["num_samples"] == "2"  # the --set override reached the cluster
    assert parent.data.metrics["trials_finished"] == 2 and "final_stsb_test" not in parent.data.metrics
    children = [r for r in runs if r.data.tags.get(PARENT_TAG) == parent.info.run_id]
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in children)
    assert all({"stsb_dev", "train_loss"} <= set(r.data.metrics) for r in children)
    assert all(r.data.tags[SWEEP_TAG] == parent.data.tags[SWEEP_TAG] for r in children)
    assert all(client.list_artifacts(r.info.run_id) for r in children)  # the trials' best weights
    assert all(r.info.artifact_uri.startswith((sweep_job.storage.parent / "mlartifacts").as_uri()) for r in children)
    (folder,) = [p for p in sweep_job.storage.iterdir() if p.name.startswith("submit-tiny-")]
    assert (folder / MANIFEST).is_file()  # Tune's state and the manifest on the shared storage


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_secrets_reach_the_job_but_are_never_shown(sweep_job: SubmittedSweep, ray_head: Head) -> None:
    info = ray_head.jobs().info(sweep_job.job_id)
    assert {"MLFLOW_TRACKING_PASSWORD", "AWS_SECRET_ACCESS_KEY"} <= set(info.runtime_env["env_vars"])
    assert "MLFLOW_TRACKING_PASSWORD=***" in sweep_job.out and "AWS_SECRET_ACCESS_KEY=***" in sweep_job.out
    raw_log = ray_head.jobs().client.get_job_logs(sweep_job.job_id)  # unredacted, straight from Ray
    shown = [sweep_job.out, sweep_job.err, raw_log]
    for argv in (("jobs", "status", sweep_job.job_id), ("jobs", "logs", sweep_job.job_id), ("jobs", "list")):
        status, out, err = _run_cli(*argv, "--address", ray_head.address)
        assert status == 0
        shown += [out, err]
    for secret in sweep_job.secrets:
        assert all(secret not in text for text in shown)


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_jobs_status_logs_and_list(sweep_job: SubmittedSweep, ray_head: Head) -> None:
    status, out, err = _run_cli("jobs", "status", sweep_job.job_id, "--address", ray_head.address)
    assert status == 0 and out.startswith(f"job {sweep_job.job_id}: SUCCEEDED")
    assert "sweep:      submit-tiny (sweep, config tiny.yaml, code project)" in out and "exit code:  0" in out
    status, out, err = _run_cli("jobs", "logs", sweep_job.job_id, "--address", ray_head.address)
    assert status == 0 and "sweep submit-tiny-" in out and "done in" in out
    status, out, err = _run_cli("jobs", "logs", sweep_job.job_id, "--follow", "--address", ray_head.address)
    assert status == 0 and "sweep submit-tiny-" in out and out.rstrip().endswith("SUCCEEDED")
    status, out, err = _run_cli("jobs", "list", "--address", ray_head.address)
    assert status == 0 and out.splitlines()[0].split() == ["JOB", "STATUS", "STARTED", "DURATION", "SWEEP",
                                                           "ENTRYPOINT"]
    (row,) = [line for line in out.splitlines() if line.startswith(sweep_job.job_id)]
    assert row.split()[1] == "SUCCEEDED" and "submit-tiny" in row
    # a job submitted without sentsweep, a login in its entrypoint: masked in all three
    jobs = ray_head.jobs()
    other = jobs.client.submit_job(entrypoint="echo http://someone:hunter2-pw@mlflow.example:5000")
    assert jobs.wait(other, timeout=60, poll=0.2) == "SUCCEEDED"
    for argv in (("jobs", "list"), ("jobs", "status", other), ("jobs", "logs", other), ("jobs", "logs", other,
                                                                                        "--follow")):
        status, out, err = _run_cli(*argv, "--address", ray_head.address)
        assert status == 0 and "hunter2-pw" not in out + err and "someone:***@mlflow.example" in out, (argv, out)


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_unknown_job_id_is_named(ray_head: Head) -> None:
    ray_head.jobs()
    for action in ("status", "logs", "stop"):
        status, out, err = _run_cli("jobs", action, "no-such-job", "--address", ray_head.address)
        assert status == 2 and "Traceback" not in err
        assert f"no job 'no-such-job' on the Ray cluster at {ray_head.address}" in err


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_stop_a_long_job(ray_head: Head, tiny_bert_dir: Path, tmp_path: Path) -> None:
    config = _sweep_yaml(tmp_path / "long.yaml", tiny_bert_dir, "long", num_samples=1,
                         fixed={"max_steps": 100_000, "eval_every": 1000, "max_length": 32})
    jobs = ray_head.jobs()
    job_id = f"sentsweep-long-{secrets.token_hex(4)}"
    status, out, err = _run_cli("submit", str(config), "--address", ray_head.address, "--installed",
                                "--storage", str(tmp_path / "shared"), "--job-id", job_id,
                                "--tracking-uri", f"sqlite:///{tmp_path / 'long.db'}")
    assert status == 0 and f"sentsweep jobs stop {job_id} --address {ray_head.address}" in out
    assert jobs.wait(job_id, timeout=60, poll=0.2, until=frozenset({"RUNNING"}) | TERMINAL) == "RUNNING"
    assert jobs.info(job_id).runtime_env["working_dir"].startswith("gcs://")  # the config alone
    status, out, err = _run_cli("jobs", "list", "--address", ray_head.address)
    (row,) = [line for line in out.splitlines() if line.startswith(job_id)]
    assert row.split()[1] == "RUNNING"

    status, out, err = _run_cli("jobs", "stop", job_id, "--address", ray_head.address)
    assert (status, out.strip()) == (0, f"job {job_id}: STOPPED")
    status, out, err = _run_cli("jobs", "status", job_id, "--address", ray_head.address)
    assert out.startswith(f"job {job_id}: STOPPED")
    status, out, err = _run_cli("jobs", "logs", job_id, "--follow", "--address", ray_head.address)
    assert status == 1 and out.rstrip().endswith("STOPPED")


#: A job printing 40 numbered lines over about 10 s.
COUNTING_JOB = "python -c \"import time\nfor i in range(40): print(f'line {i}', flush=True); time.sleep(0.25)\""


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_follow_goes_on_across_a_lost_connection(ray_head: Head) -> None:
    """A port-forward that drops mid-log and refuses connections for 3 s: every line arrives once, in order."""
    job_id = ray_head.jobs().client.submit_job(entrypoint=COUNTING_JOB)
    with tcp_proxy(int(ray_head.address.rsplit(":", 1)[1])) as proxy:
        written: list[str] = []
        notices: list[str] = []
        cut: list[bool] = []

        def write(chunk: str) -> None:
            written.append(chunk)
            if "line 8\n" in "".join(written) and not cut:  # once: the connection drops, then comes back
                cut.append(True)
                proxy.refusing = True
                proxy.cut()
                threading.Timer(3.0, setattr, (proxy, "refusing", False)).start()

        through = ClusterJobs(f"http://127.0.0.1:{proxy.port}")
        status = through.follow(job_id, write, notice=notices.append)
    lines = [line for line in "".join(written).splitlines() if line.startswith("line ")]
    assert (status, lines) == ("SUCCEEDED", [f"line {i}" for i in range(40)])
    assert len(notices) == 2, notices
    assert notices[0].startswith(f"lost the connection to the Ray dashboard at {through.address} (")
    assert notices[0].endswith("trying again for up to 10 min (the job goes on)")
    assert notices[1] == f"reconnected to the Ray dashboard at {through.address}; the log goes on"


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_follow_gives_up_once_the_dashboard_stays_away(ray_head: Head) -> None:
    """The connection drops after the first line and never comes back; the clock jumps 700 s a reading, so the
    first retry is past the 10 minutes and follow ends in one line."""
    jobs = ray_head.jobs()
    job_id = jobs.client.submit_job(entrypoint="python -c \"print('started', flush=True); import time; "
                                               "time.sleep(120)\"")
    try:
        with tcp_proxy(int(ray_head.address.rsplit(":", 1)[1])) as proxy:
            through = ClusterJobs(f"http://127.0.0.1:{proxy.port}")

            def write(chunk: str) -> None:
                proxy.refusing = True
                proxy.cut()

            notices: list[str] = []
            ticks = itertools.count(0, 700)
            with pytest.raises(ClusterError, match=r"lost the connection to the Ray dashboard at http://127\.0\.0\.1"):
                through.follow(job_id, write, notice=notices.append, clock=lambda: next(ticks),
                               sleep=lambda seconds: None)
            assert len(notices) == 1 and notices[0].startswith("lost the connection")
    finally:
        jobs.stop(job_id)
