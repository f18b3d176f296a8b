"""Multi-view search spaces (every view pair, the paper's setting first) and the multi-view sweep configs."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from sentsweep.search_spaces.multiview import (
    ALL_PAIRS,
    MULTIVIEW_DEMO_SPACE,
    MULTIVIEW_PAIRS_SPACE,
    MULTIVIEW_SPACE,
    VIEW_PAIRS,
)
from sentsweep.trainables.multiview import MULTIVIEW
from tests.search_spaces.space_contract import sample_params

REPO = Path(__file__).resolve().parents[2]



def test_spaces_cover_the_pairs_and_give_valid_configs() -> None:
    assert len(VIEW_PAIRS) == 6 and "dep+const" in VIEW_PAIRS and "seq+seq" in ALL_PAIRS
    seen = set()
    for spec in (MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE):
        for params in sample_params(spec, 60):
            seen.add(params["views"])
            config = MULTIVIEW.parse(params)
            assert str(config.views) == params["views"]  # already canonical
            assert 1e-4 <= config.lr <= 2e-3
    assert seen == set(ALL_PAIRS)


def test_first_points_are_the_papers_setting() -> None:
    assert MULTIVIEW_SPACE.first_point == {
        "views": "dep+const",
        "hidden_size": 2400,
        "lr": 5e-4,
        "batch_size": 400,
        "freeze_vectors": True,
    }
    for spec in (MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE, MULTIVIEW_PAIRS_SPACE):
        study = optuna.create_study()
        study.enqueue_trial(spec.first_point)
        assert spec.sample(study.ask()) == spec.first_point
    assert [p["views"] for p in MULTIVIEW_PAIRS_SPACE.extra_points] == ["seq+dep", "seq+const", "seq+seq"]


@pytest.mark.parametrize("name", ["demo-multiview.yaml", "paper-multiview.yaml"])
def test_sweep_configs_validate(name: str) -> None:
    from sentsweep.platform.config import load_sweep_config

    config = load_sweep_config(REPO / "configs" / name)
    # STS-B dev selection, as the other methods
    assert config.method == "multiview" and config.metric == "stsb_dev" and config.fixed["dev_data"] == "stsb"
    space = {s.name: s for s in (MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE, MULTIVIEW_PAIRS_SPACE)}[
        config.space_name
    ]
    for point in (space.first_point, *space.extra_points):
        MULTIVIEW.parse({**config.fixed, **point}, source=name)
