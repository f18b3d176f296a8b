"""A local sweep's Ray listens on the loopback interface only (no unauthenticated port on the host's network).
Each test starts that Ray in a process of its own: run by make test-cluster (CI runs both)."""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from tools.harness.processes import REPO, repo_pythonpath

pytestmark = pytest.mark.cluster  # a Ray of its own, in a process of its own

#: Starts the sweep's own local Ray (:func:`~sentsweep.platform.driver.ray_session.ray_session`, ray imported first, as
#: in a notebook) and prints the address of every listening socket of the driver and of the processes Ray started.
PROBE = """
import os, psutil, ray, time
from sentsweep.platform.driver.ray_session import CLUSTER_MODE_ENV
from sentsweep.platform.driver.ray_session import ray_session
with ray_session():
    time.sleep(2)  # the agents open their ports after init returns
    ours = {p.pid for p in psutil.Process().children(recursive=True)} | {os.getpid()}
    for c in psutil.net_connections("inet"):
        if c.status == psutil.CONN_LISTEN and c.pid in ours:
            print("listen", c.laddr.ip)
    print("gcs", ray.get_runtime_context().gcs_address)
print("after", os.environ.get(CLUSTER_MODE_ENV), ray._private.ray_constants.ENABLE_RAY_CLUSTER)
"""


def _is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def test_a_local_sweeps_ray_listens_on_loopback_only() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=repo_pythonpath())
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=180, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    listening = {line.split()[1] for line in lines if line.startswith("listen ")}
    gcs = next(line.split()[1] for line in lines if line.startswith("gcs "))
    assert len(listening) >= 1  # the GCS and the raylet at least
    assert all(_is_loopback(ip) for ip in listening), listening  # never 0.0.0.0, :: or the host's address
    assert gcs.startswith("127.0.0.1:"), gcs
    assert lines[-1] == "after None True"  # the driver's own setting is back once the sweep's Ray is gone


#: Starts the sweep's own local Ray with Ray's default authentication (RAY_AUTH_MODE unset, as `make demo` runs),
#: runs a task, and tries to join it from two other processes: with the session's token, and without any.
TOKEN_PROBE = """
import os, subprocess, sys
import ray
from sentsweep.platform.driver.ray_session import ray_session
JOIN = "import ray; ray.init(address=sys.argv[1]); print('joined')"
with ray_session():
    @ray.remote
    def mode():
        return os.environ.get("RAY_AUTH_MODE")
    print("task", ray.get(mode.remote()))
    gcs = ray.get_runtime_context().gcs_address
    for label, env in (("with", dict(os.environ)), ("without", {k: v for k, v in os.environ.items()
                                                              if k != "RAY_AUTH_TOKEN"})):
        done = subprocess.run([sys.executable, "-c", "import sys; " + JOIN, gcs], env=env, capture_output=True,
                              text=True, timeout=120)
        print(label, "joined" in done.stdout)
print("after", os.environ.get("RAY_AUTH_MODE"), os.environ.get("RAY_AUTH_TOKEN"))
"""


def test_a_local_sweeps_ray_takes_a_token_of_its_session_and_writes_none(tmp_path) -> None:
    """Ray 2.60 turns token authentication on for a new local cluster and writes the token to ~/.ray/auth_token
    under the usual umask, readable by the host's other users: the sweep's Ray takes a
    token drawn for the session, held in the environment only; a process without it cannot join."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env.update(PYTHONPATH=repo_pythonpath(), HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", TOKEN_PROBE], env=env, capture_output=True, text=True, timeout=300,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-4:] == ["task token", "with True", "without False", "after None None"]
    assert not (tmp_path / ".ray" / "auth_token").exists()


#: Starts the sweep's own local Ray with a tracking password and a webhook URL in the driver's environment, and
#: prints which of the two a task sees, which any process the Ray started holds, and which the driver keeps after.
SECRETS_PROBE = """
import os, psutil, ray
from sentsweep.platform.driver.ray_session import ray_session
NAMES = ("MLFLOW_TRACKING_PASSWORD", "SWEEP_HOOK_URL")
with ray_session(hide=["SWEEP_HOOK_URL"]):
    @ray.remote
    def seen():
        return [name for name in NAMES if name in os.environ]
    print("task", ray.get(seen.remote()))
    held = set()
    for child in psutil.Process().children(recursive=True):
        try:
            held |= {name for name in NAMES if name in child.environ()}
        except psutil.Error:
            pass
    print("processes", sorted(held))
print("after", [name for name in NAMES if name in os.environ])
"""


def test_a_local_sweeps_ray_inherits_neither_the_tracking_credentials_nor_the_webhook_url() -> None:
    """Only the driver talks to MLflow and sends notifications: the processes of the Ray it starts (workers, raylet,
    agents) never hold the tracking password nor the webhook URL, and the driver keeps both."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=repo_pythonpath(), MLFLOW_TRACKING_PASSWORD="s3cret",
               SWEEP_HOOK_URL="https://hooks.example/T0/B0/key")
    done = subprocess.run([sys.executable, "-c", SECRETS_PROBE], env=env, capture_output=True, text=True,
                          timeout=180, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-3:] == [
        "task []", "processes []", "after ['MLFLOW_TRACKING_PASSWORD', 'SWEEP_HOOK_URL']"]


#: Runs one Tune trial in the sweep's own local Ray with storage keys and a database password in the driver's
#: environment, and prints which of them the trial sees.
TUNE_SECRETS_PROBE = """
import os, ray
from ray import tune
from sentsweep.platform.driver.ray_session import ray_session
NAMES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "PGPASSWORD")
def trial(config):
    tune.report({"seen": ",".join(name for name in NAMES if name in os.environ)})
with ray_session():
    grid = tune.Tuner(trial, run_config=tune.RunConfig(storage_path=os.environ["PROBE_STORAGE"], verbose=0)).fit()
    print("trial", grid[0].metrics["seen"])
"""



def _run_tune_probe(tmp_path: Path, secrets: dict[str, str]) -> tuple[str, list[str]]:
    """What :data:`TUNE_SECRETS_PROBE` prints last with ``secrets`` in the driver's environment, and the files of its
    Ray session that hold one of them (as ``FILE: NAME``)."""
    ray_tmp = Path(tempfile.mkdtemp(prefix="ssray-", dir="/tmp"))  # short: Ray's socket paths must fit 107 chars
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="disabled", PYTHONPATH=repo_pythonpath(), RAY_TMPDIR=str(ray_tmp),
               PROBE_STORAGE=str(tmp_path / "results"), **secrets)
    try:
        done = subprocess.run([sys.executable, "-c", TUNE_SECRETS_PROBE], env=env, capture_output=True, text=True,
                              timeout=300, cwd=REPO)
        assert done.returncode == 0, done.stderr[-2000:]
        held = sorted(f"{path.relative_to(ray_tmp)}: {name}" for path in ray_tmp.rglob("*") if path.is_file()
                      for name, value in secrets.items() if value.encode() in path.read_bytes())
        return done.stdout.splitlines()[-1], held
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_a_local_sweeps_trials_get_storage_keys_that_no_ray_log_or_actor_spec_holds(tmp_path) -> None:
    """Ray Tune copies the driver's ``AWS_*`` keys into every trial actor's runtime_env, which Ray's runtime-env
    agent writes to its log in the session folder and its State API shows. The trials of the sweep's own Ray inherit
    the keys from the driver instead (they write checkpoints to S3): no file of the session holds them."""
    secrets = {"AWS_ACCESS_KEY_ID": "AKIAPROBE" + uuid.uuid4().hex[:8],
               "AWS_SECRET_ACCESS_KEY": "aws-" + uuid.uuid4().hex, "AWS_SESSION_TOKEN": "tok-" + uuid.uuid4().hex}
    seen, held = _run_tune_probe(tmp_path, secrets)
    assert seen == "trial AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,AWS_SESSION_TOKEN"
    assert held == []


def test_a_local_sweeps_trials_never_hold_the_tracking_databases_password(tmp_path) -> None:
    """A ``postgresql://user:PASSWORD@db/mlflow`` tracking URI leaves its password in ``PGPASSWORD``, a credential of
    the tracking store, which only the driver writes to: no trial of the sweep's own Ray sees it."""
    seen, held = _run_tune_probe(tmp_path, {"PGPASSWORD": "pg-" + uuid.uuid4().hex})
    assert seen.split() == ["trial"]
    assert held == []
