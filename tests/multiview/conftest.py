"""Fixtures of the multi-view tests: one spaCy-backed parser per session, caching under a tmp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentsweep.data.parsing import Parser

SENTENCES = [
    "The cat sat on the mat.",
    "A black bird is sitting on a dead tree.",
    "Rugby is being played by some men.",
    "A crowd of people is near the water.",
    "Some men are playing rugby.",
    "It rains.",
]


@pytest.fixture(scope="session")
def parse_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("parse-cache")


@pytest.fixture(scope="session")
def parser(parse_cache: Path) -> Parser:
    """spaCy (en_core_web_sm or the offline re-upload) + the derived constituency backend."""
    try:
        found = Parser("derived", cache=parse_cache)
        found.nlp  # noqa: B018 - load now, so a missing model skips instead of failing later
    except Exception as exc:  # pragma: no cover - depends on the installed spaCy pipeline
        pytest.skip(f"no English spaCy pipeline: {exc}")
    return found


@pytest.fixture(autouse=True, scope="package")
def one_torch_thread():
    """One intra-op thread: these tests run many tiny ops, where a shared, loaded CPU makes thread
    synchronisation cost more than the work (restored afterwards)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
