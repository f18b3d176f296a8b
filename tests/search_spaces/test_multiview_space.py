"""Multi-view search spaces (every view pair, the paper's setting first) and the multi-view sweep configs."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import optuna
import pytest

from sentsweep.methods.multiview.views import VIEWS
from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.multiview import MULTIVIEW
from tests.search_spaces.space_contract import sample_params

REPO = Path(__file__).resolve().parents[2]
#: The six unordered pairs of distinct views (the trainable's canonical order), then the same-view baselines.
ALL_PAIRS = {f"{a}+{b}" for a, b in combinations(VIEWS, 2)} | {f"{v}+{v}" for v in VIEWS}


def test_spaces_cover_the_pairs_and_give_valid_configs() -> None:
    seen = set()
    for name in ("multiview", "multiview-demo"):
        for params in sample_params(SEARCH_SPACES[name], 60):
            seen.add(params["views"])
            config = MULTIVIEW.parse(params)
            assert str(config.views) == params["views"]  # already canonical
            assert 1e-4 <= config.lr <= 2e-3
    assert seen == ALL_PAIRS and len(ALL_PAIRS) == 10


def test_first_points_are_the_papers_setting() -> None:
    assert SEARCH_SPACES["multiview"].first_point == {
        "views": "dep+const",
        "hidden_size": 2400,
        "lr": 5e-4,
        "batch_size": 400,
        "freeze_vectors": True,
    }
    assert SEARCH_SPACES["multiview-demo"].first_point == SEARCH_SPACES["multiview"].first_point | {
        "hidden_size": 64, "batch_size": 64}
    for name in ("multiview", "multiview-demo", "multiview-pairs"):
        spec = SEARCH_SPACES[name]
        study = optuna.create_study()
        study.enqueue_trial(spec.first_point)
        assert spec.sample(study.ask()) == spec.first_point
    assert [p["views"] for p in SEARCH_SPACES["multiview-pairs"].extra_points] == ["seq+dep", "seq+const", "seq+seq"]


@pytest.mark.parametrize("name", ["demo-multiview.yaml", "paper-multiview.yaml"])
def test_sweep_configs_validate(name: str) -> None:
    from sentsweep.platform.config import load_sweep_config

    config = load_sweep_config(REPO / "configs" / name)
    # STS-B dev selection, as the other methods
    assert config.method == "multiview" and config.metric == "stsb_dev" and config.fixed["dev_data"] == "stsb"
    space = SEARCH_SPACES[config.space_name]
    for point in (space.first_point, *space.extra_points):
        MULTIVIEW.parse({**config.fixed, **point}, source=name)


def test_two_spellings_of_one_view_pair_are_refused() -> None:
    """The pair is unordered: ``const+dep`` is ``dep+const``, so a choice of both would sample it twice as often."""
    from sentsweep.search_spaces.checks import check_definition
    from sentsweep.search_spaces.sampling import SpaceSyntaxError
    from sentsweep.search_spaces.yaml_space import parse_definition
    from sentsweep.trainables.multiview import MultiviewConfig

    with pytest.raises(SpaceSyntaxError, match=r"'dep\+const' and 'const\+dep' are one value of MultiviewConfig.views"):
        check_definition(parse_definition({"views": {"choice": ["dep+const", "const+dep"]}}), MultiviewConfig)
