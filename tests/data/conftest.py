"""Fixtures for the data-layer tests: the bundled sample and tmp layouts (the shared data: ``shared_source`` of
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sentsweep.data import SAMPLE_DIR, DataSource, resolve_data_dir


@pytest.fixture(scope="session")
def sample() -> DataSource:
    """The bundled sample, named explicitly so SENTSWEEP_DATA cannot redirect these tests."""
    return resolve_data_dir(SAMPLE_DIR)


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
