"""Fixtures for the data-layer tests: the bundled sample, the shared data (or a skip), tmp layouts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sentsweep.config import data_dir_from_env
from sentsweep.data import SAMPLE_DIR, DataSource, resolve_data_dir


def _shared_data_dir() -> Path | None:
    """SENTSWEEP_DATA when set, else ../shared/data next to the repository; None when neither exists."""
    candidate = data_dir_from_env() or Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return candidate if (candidate / "senteval").is_dir() else None


@pytest.fixture(scope="session")
def sample() -> DataSource:
    """The bundled sample, named explicitly so SENTSWEEP_DATA cannot redirect these tests."""
    return resolve_data_dir(SAMPLE_DIR)


@pytest.fixture(scope="session")
def shared_data() -> DataSource:
    """The full shared data; the test is skipped, with the reason, when it is not available."""
    root = _shared_data_dir()
    if root is None:
        pytest.skip("shared data not found: set SENTSWEEP_DATA or put it at ../shared/data")
    source = resolve_data_dir(root)
    if source.is_sample:
        pytest.skip("SENTSWEEP_DATA points at the bundled sample, not the shared data")
    return source


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    """Write ``content`` at ``relative`` under tmp_path (a data root in the SentEval layout)."""

    def write(relative: str, content: str | bytes) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        return path

    return write
