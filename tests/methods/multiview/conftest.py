"""The multi-view model tests run many tiny ops: one torch thread per module (``one_torch_thread``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread(one_torch_thread: None) -> Iterator[None]:
    yield
