"""A sweep folder on a storage that fails the way S3 does in an outage: a real local folder behind a pyarrow file
system whose chosen calls raise ``OSError`` (what pyarrow raises for an S3 network error or a 5xx; a missing key
is a ``FileNotFoundError``) a given number of times, then work again.

Nothing of sentsweep is replaced: the code under test gets a real :class:`pyarrow.fs.PyFileSystem` and reads and
writes real files through it."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs

from sentsweep.platform.location import SweepLocation

#: What pyarrow's S3 file system raises when the endpoint does not answer.
BLIP = "When reading information for key '{path}' in bucket 'sentsweep': AWS Error NETWORK_CONNECTION: curlCode: 28"


class FlakyHandler(pyarrow.fs.FileSystemHandler):
    """``root`` on the local disk, where the calls named in ``failures`` (``(method, path suffix)``: how many
    times) raise ``OSError`` before they work."""

    def __init__(self, root: str | Path, failures: dict[tuple[str, str], int] | None = None) -> None:
        self.inner = pyarrow.fs.SubTreeFileSystem(str(root), pyarrow.fs.LocalFileSystem())
        self.failures = dict(failures or {})
        self.failed: list[tuple[str, str]] = []

    def fail(self, method: str, suffix: str, times: int = 1) -> None:
        """Make the next ``times`` calls of ``method`` on a path ending in ``suffix`` raise."""
        self.failures[(method, suffix)] = times

    def _blip(self, method: str, path: str) -> None:
        for (name, suffix), left in self.failures.items():
            if name == method and path.endswith(suffix) and left > 0:
                self.failures[(name, suffix)] = left - 1
                self.failed.append((method, path))
                raise OSError(BLIP.format(path=path))

    def get_type_name(self) -> str:
        return "flaky"

    def normalize_path(self, path: str) -> str:
        return path

    def equals(self, other: object) -> bool:
        return self is other

    def get_file_info(self, paths: list[str]) -> list[pyarrow.fs.FileInfo]:
        for path in paths:
            self._blip("get_file_info", path)
        return self.inner.get_file_info(paths)

    def get_file_info_selector(self, selector: pyarrow.fs.FileSelector) -> list[pyarrow.fs.FileInfo]:
        self._blip("get_file_info_selector", selector.base_dir)
        return self.inner.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.inner.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.inner.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.inner.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        self.inner.delete_dir_contents("", accept_root_dir=True)

    def delete_file(self, path: str) -> None:
        self._blip("delete_file", path)
        self.inner.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.inner.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self._blip("copy_file", dest)
        self.inner.copy_file(src, dest)

    def open_input_stream(self, path: str) -> pyarrow.NativeFile:
        self._blip("open_input_stream", path)
        return self.inner.open_input_stream(path)

    def open_input_file(self, path: str) -> pyarrow.NativeFile:
        self._blip("open_input_file", path)
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str, metadata: dict | None = None) -> pyarrow.NativeFile:
        self._blip("open_output_stream", path)
        return self.inner.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: dict | None = None) -> pyarrow.NativeFile:
        return self.inner.open_append_stream(path, metadata=metadata)


def flaky_location(root: Path, name: str = "sweep") -> tuple[SweepLocation, FlakyHandler]:
    """The sweep folder ``root/name`` reached through a :class:`FlakyHandler` (named as if it were on S3)."""
    (root / name).mkdir(parents=True, exist_ok=True)
    handler = FlakyHandler(root)
    fs = pyarrow.fs.PyFileSystem(handler)
    return SweepLocation("", name, fs, f"s3://sentsweep/{name}"), handler
