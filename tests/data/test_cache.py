"""The cache utility with real processes: one build for concurrent fillers, never a half-written file."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sentsweep
from sentsweep.data.cache import atomic_write, content_hash, get_or_build, lock_path

#: A child process: waits for the start signal, then fills (or writes) the cache slowly.
CHILD = """
import hashlib, os, sys, time
from pathlib import Path
from sentsweep.data.cache import atomic_write, get_or_build

mode, path, log, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
payload = b"".join(bytes([i % 251]) * 1000 for i in range(2000))  # 2 MB, written in 20 slow chunks

def note(line):
    with open(log, "a") as handle:
        handle.write(line + "\\n")

def write(value, handle):
    for i in range(0, len(value), 100_000):
        handle.write(value[i : i + 100_000])
        handle.flush()
        time.sleep(0.01)

def read(p):
    data = p.read_bytes()
    if data != payload:
        note(f"partial {len(data)}")
        return None
    return data

def build():
    note("build")
    time.sleep(0.2)
    return payload

while not go.exists():
    time.sleep(0.005)
if mode == "fill":
    value, hit = get_or_build(path, read=read, build=build, write=write)
    note(f"result {hashlib.sha256(value).hexdigest()} {hit}")
else:
    with atomic_write(path) as handle:
        write(payload, handle)
"""
PAYLOAD = b"".join(bytes([i % 251]) * 1000 for i in range(2000))


def _start(mode: str, path: Path, log: Path, go: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    root = str(Path(sentsweep.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen([sys.executable, "-c", CHILD, mode, str(path), str(log), str(go)], env=env)


def _wait(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        assert process.wait(timeout=120) == 0


def test_concurrent_fillers_build_once_and_share_one_valid_file(tmp_path: Path) -> None:
    path, log, go = tmp_path / "cache" / "value.bin", tmp_path / "log.txt", tmp_path / "go"
    processes = [_start("fill", path, log, go) for _ in range(3)]
    time.sleep(1.0)  # let the interpreters start, so that they race for the lock
    go.touch()
    _wait(processes)
    lines = log.read_text().splitlines()
    assert lines.count("build") == 1, lines  # the lock: one process built, the others waited and read
    assert not [line for line in lines if line.startswith("partial")], lines
    results = [line.split() for line in lines if line.startswith("result")]
    assert len(results) == 3
    assert {digest for _, digest, _ in results} == {hashlib.sha256(PAYLOAD).hexdigest()}
    assert sorted(hit for _, _, hit in results) == ["False", "True", "True"]
    assert path.read_bytes() == PAYLOAD
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, lock_path(path).name])


def test_a_reader_never_sees_a_half_written_file(tmp_path: Path) -> None:
    path, log, go = tmp_path / "value.bin", tmp_path / "log.txt", tmp_path / "go"
    writer = _start("write", path, log, go)
    time.sleep(0.5)
    go.touch()
    seen: list[int] = []
    deadline = time.monotonic() + 60
    while writer.poll() is None and time.monotonic() < deadline:
        if path.exists():
            seen.append(len(path.read_bytes()))
        time.sleep(0.002)
    _wait([writer])
    assert set(seen) <= {len(PAYLOAD)}  # only ever absent or whole (a direct write shows ~20 sizes)
    assert path.read_bytes() == PAYLOAD


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "value.bin"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(path) as handle:
        handle.write(b"new, half")
        raise RuntimeError("killed mid-write")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["value.bin"]


def test_an_unreadable_file_is_rebuilt_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "value.txt"
    path.write_bytes(b"garbage")

    def read(p: Path) -> str | None:
        text = p.read_text()
        return text if text.startswith("ok") else None

    value, hit = get_or_build(path, read=read, build=lambda: "ok 1", write=lambda v, h: h.write(v.encode()))
    assert (value, hit) == ("ok 1", False) and path.read_text() == "ok 1"
    again = get_or_build(path, read=read, build=lambda: pytest.fail("rebuilt a valid file"), write=print)
    assert again == ("ok 1", True)


def test_content_hash_is_the_digest_of_the_concatenation() -> None:
    assert content_hash(["ab", b"c"]) == hashlib.sha256(b"abc").hexdigest()
    assert content_hash(["a"], "sha1") == hashlib.sha1(b"a").hexdigest()
    assert content_hash(["a\n", "b\n"]) != content_hash(["a b\n"])
