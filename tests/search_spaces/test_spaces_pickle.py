"""Every registered space works inside the sweep's searcher, whose state Tune saves with plain ``pickle``
(a closure here crashed a multi-view sweep at its first experiment checkpoint)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.search import build_searcher
from sentsweep.search_spaces import SEARCH_SPACES


@pytest.mark.parametrize("name", sorted(SEARCH_SPACES))
def test_the_searcher_of_every_space_suggests_and_saves(name: str, tmp_path: Path) -> None:
    spec = SEARCH_SPACES[name]
    config = SweepConfig.model_validate({"name": "s", "method": spec.method, "search_space": name})
    searcher = build_searcher(config, spec.define_by_run, [spec.first_point])
    first = searcher.suggest("t1")
    assert first is not None and all(first[k] == v for k, v in spec.first_point.items())
    second = searcher.suggest("t2")
    assert second, f"space {name} suggested nothing"
    searcher.save(str(tmp_path / "searcher.pkl"))
    with open(tmp_path / "searcher.pkl", "rb") as handle:
        assert pickle.load(handle)
