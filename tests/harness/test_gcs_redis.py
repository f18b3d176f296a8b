"""The GCS Redis of k8s/base/gcs-redis.yaml, run for real: redis-server reads the manifest's own here-document
(:mod:`tools.harness.gcs_redis`), a local Ray head keeps its GCS there as the ACL user a RayCluster's
``redisUsername`` names, and KubeRay's cleanup Job's command deletes the cluster's keys after. The GCS user is
refused what Ray does not need, and the default user cannot log in.

A test admin user, added after the manifest's lines and used by the assertions alone, reads the keys and Redis's ACL
log (every command or key refused to a client). The password is random per Redis and never printed."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest
from redis import Redis
from redis.exceptions import NoPermissionError, RedisError

from tools.harness import gcs_redis
from tools.harness.gcs_redis import GcsRedis
from tools.harness.processes import LOOPBACK
from tools.harness.ray_head import head_env, start_head

pytestmark = pytest.mark.skipif(gcs_redis.unavailable_reason() is not None,
                                reason=gcs_redis.unavailable_reason() or "")

ADMIN = "sentsweep-test-admin"
#: What KubeRay's Redis cleanup Job runs (buildRedisCleanupJob in raycluster_controller.go, KubeRay 1.3 and later, with
#: REDIS_USERNAME set): the Job gets the head's env, RAY_REDIS_ADDRESS and RAY_external_storage_namespace included.
CLEANUP = (
    "from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; "
    "import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, "
    "port=parsed.port, username=os.getenv('REDIS_USERNAME', parsed.username), password=os.getenv('REDIS_PASSWORD', "
    "parsed.password or ''), use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None")
#: A sweep's use of the GCS: a runtime_env package (working_dir), a task, a named detached actor, a placement group
#: and the internal key-value store. It prints the node it ran on.
WORK = """
import pathlib, sys, tempfile
import ray
from ray.experimental import internal_kv
from ray.util.placement_group import placement_group

folder = pathlib.Path(tempfile.mkdtemp())
(folder / "shipped.py").write_text("X = 41\\n")
ray.init(address=sys.argv[1], runtime_env={"working_dir": str(folder)})

@ray.remote
def add(x):
    import shipped
    return shipped.X + x

@ray.remote
class Counter:
    def __init__(self):
        self.n = 0

    def inc(self):
        self.n += 1
        return self.n

assert ray.get(add.remote(1)) == 42
counter = Counter.options(name="kept", namespace="gcs-test", lifetime="detached").remote()
assert ray.get(counter.inc.remote()) == 1
group = placement_group([{"CPU": 1}])
ray.get(group.ready(), timeout=60)
internal_kv._internal_kv_put(b"sweep", b"state", namespace=b"gcs-test")
print("node", ray.get_runtime_context().get_node_id())
"""
#: After a head restart: the new GCS read the first head's state back from Redis.
READ_BACK = """
import sys
import ray
from ray.experimental import internal_kv

ray.init(address=sys.argv[1])
assert internal_kv._internal_kv_get(b"sweep", namespace=b"gcs-test") == b"state"
print("nodes", " ".join(n["NodeID"] for n in ray.nodes()))
"""


def _admin(redis: GcsRedis) -> Redis:
    return redis.connect(ADMIN, redis.password)


def _keys(redis: GcsRedis) -> list[str]:
    with _admin(redis) as admin:
        return sorted(admin.scan_iter(count=1000))


def _refused(connection: Redis, *command: str) -> RedisError:
    with pytest.raises(RedisError) as refusal:
        connection.execute_command(*command)
    return refusal.value


def _driver(script: str, address: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", script, address], env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_the_gcs_user_is_refused_what_ray_does_not_need_and_the_default_user_cannot_log_in() -> None:
    with gcs_redis.gcs_redis() as redis:
        with redis.connect() as gcs:
            assert gcs.ping() is True
            assert gcs.hset("RAYx@KV", "k", "v") == 1
            for command in (("FLUSHALL",), ("FLUSHDB",), ("CONFIG", "SET", "dir", "/tmp"), ("CONFIG", "GET", "*"),
                            ("KEYS", "*"), ("MONITOR",), ("ACL", "LIST"), ("SHUTDOWN",), ("DEBUG", "SLEEP", "0"),
                            ("MODULE", "LIST"), ("CLIENT", "LIST"), ("EVAL", "return 1", "0"),
                            ("REPLICAOF", "127.0.0.1", "1")):
                refusal = _refused(gcs, *command)  # Redis 7 refuses DEBUG and MODULE first (enable-* lines)
                assert isinstance(refusal, NoPermissionError) or " command not allowed" in str(refusal), command
            assert isinstance(_refused(gcs, "SET", "other", "v"), NoPermissionError)  # a key outside RAY*
            assert isinstance(_refused(gcs, "HGET", "other", "k"), NoPermissionError)
        # RESP2, and no CLIENT SETINFO: a client that sends nothing before the command tried
        with Redis(LOOPBACK, redis.port, socket_timeout=10, protocol=2, driver_info=None) as anonymous:
            assert "Authentication required" in str(_refused(anonymous, "PING"))  # NOAUTH
            for login in ((redis.password,), ("default", redis.password)):  # the default user: off
                assert "invalid username-password pair" in str(_refused(anonymous, "AUTH", *login))  # WRONGPASS


@pytest.mark.cluster  # `ray start --head` twice: run by make test-cluster
def test_rays_gcs_keeps_its_state_in_the_shipped_redis_as_its_acl_user_and_the_cleanup_job_deletes_it() -> None:
    namespace = str(uuid.uuid4())  # KubeRay's key prefix: the RayCluster's UID
    with gcs_redis.gcs_redis(admin=ADMIN) as redis:
        env = {"RAY_REDIS_ADDRESS": redis.address, "RAY_external_storage_namespace": namespace}
        # What KubeRay's rayStartParams give `ray start`: redis-username and redis-password from the head's env.
        args = ["--redis-username", redis.username, "--redis-password", redis.password]
        driver_env = head_env(None)  # the head's single-machine mode (every address on 127.0.0.1), no token
        head = start_head(num_cpus=2, env=env, args=args)
        try:
            first_node = _driver(WORK, head.gcs_address, driver_env).split("node ")[-1].strip()
        finally:
            head.stop()
        prefix = f"RAY{namespace}@"
        tables = {key.removeprefix(prefix) for key in _keys(redis)}
        assert all(key.startswith(prefix) for key in _keys(redis)), _keys(redis)
        assert {"NODE", "ACTOR", "PLACEMENT_GROUP", "JOB", "KV", "JobCounter"} <= tables, tables
        head = start_head(num_cpus=2, env=env, args=args)  # a restarted head pod: a new GCS on the same prefix
        try:
            assert first_node in _driver(READ_BACK, head.gcs_address, driver_env)
        finally:
            head.stop()
        with _admin(redis) as admin:
            assert admin.acl_log() == [], "Redis refused a command or key to Ray's GCS"
        cleanup_env = {**driver_env, **env, "REDIS_USERNAME": redis.username, "REDIS_PASSWORD": redis.password,
                       "RAY_redis_db_connect_retries": "120", "RAY_redis_db_connect_wait_milliseconds": "500"}
        done = subprocess.run([sys.executable, "-c", CLEANUP], env=cleanup_env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert [key for key in _keys(redis) if key.startswith(prefix)] == []
        with _admin(redis) as admin:
            assert admin.acl_log() == [], "Redis refused a command or key to KubeRay's cleanup"
