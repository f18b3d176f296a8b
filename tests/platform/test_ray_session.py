"""A local sweep starts its own Ray: it never joins a cluster somebody else started on the machine."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tools.harness.processes import repo_pythonpath
from tools.harness.ray_head import head_env, ray_head

REPO = Path(__file__).resolve().parents[2]
#: Prints the GCS address of the Ray the driver ends up on: ``plain`` = ``ray.init()`` as Ray documents it,
#: ``sweep`` = the sweep's own :func:`~sentsweep.platform.driver.ray_session.ray_session` without an address.
PROBE = """
import sys
import ray
from sentsweep.platform.driver.ray_session import ray_session
if sys.argv[1] == "plain":
    ray.init(include_dashboard=False, logging_level="ERROR")
    print(ray.get_runtime_context().gcs_address)
    ray.shutdown()
else:
    with ray_session():
        print(ray.get_runtime_context().gcs_address)
"""


def _probe(mode: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, timeout=180,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.cluster  # a `ray start --head` of its own: run by make test-cluster (CI runs both)
def test_a_sweep_without_an_address_never_joins_the_clusters_ray_start_left_on_the_machine() -> None:
    with ray_head(num_cpus=1) as head, tempfile.TemporaryDirectory(prefix="rt-", dir="/tmp") as tmp:
        # What `ray start` writes where ray.init() looks: <temp>/ray/ray_current_cluster (here under RAY_TMPDIR,
        # so the machine's /tmp/ray is left alone).
        (Path(tmp) / "ray").mkdir()
        (Path(tmp) / "ray" / "ray_current_cluster").write_text(head.gcs_address)
        env = {**head_env(None), "RAY_TMPDIR": tmp,
               "PYTHONPATH": repo_pythonpath()}
        assert _probe("plain", env) == head.gcs_address  # the trap: plain ray.init() joins the other cluster
        assert _probe("sweep", env) != head.gcs_address  # the sweep starts a Ray of its own
        assert _probe("sweep", {**env, "RAY_ADDRESS": head.gcs_address}) == head.gcs_address  # a job's driver joins


def test_an_address_where_no_ray_answers_is_refused_at_once(monkeypatch) -> None:
    """``ray.init`` waits without end for a cluster that is not there: the sweep refuses the address first, naming
    where it came from; an address that answers, and the forms Ray resolves itself, pass."""
    import socket

    from sentsweep.errors import ConfigError
    from sentsweep.platform.driver.ray_session import refuse_unanswered_ray

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        open_port = listening.getsockname()[1]
        refuse_unanswered_ray(f"127.0.0.1:{open_port}")
        refuse_unanswered_ray(f"ray://127.0.0.1:{open_port}")
    with socket.socket() as closed:  # bound, never listening: refused
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
        refused = rf"option '--address': no Ray cluster answers at 127.0.0.1:{closed_port} "
        with pytest.raises(ConfigError, match=refused):
            refuse_unanswered_ray(f"127.0.0.1:{closed_port}")
        monkeypatch.setenv("RAY_ADDRESS", f"localhost:{closed_port}")
        with pytest.raises(ConfigError, match="field 'RAY_ADDRESS': no Ray cluster answers at localhost:"):
            refuse_unanswered_ray(None)
    for resolved_by_ray in ("local", "auto", "http://head:8265"):
        refuse_unanswered_ray(resolved_by_ray)
