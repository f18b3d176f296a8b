"""What every search space must do, as test cases (subclass :class:`SpaceContract` with a ``space_name``
fixture; :mod:`test_space_contracts` runs them on every registered space)."""

from __future__ import annotations

import pickle
from pathlib import Path

import optuna
import pytest
from ray.tune.search import Searcher

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.search.searcher import build_searcher
from sentsweep.search_spaces import SEARCH_SPACES, SearchSpaceSpec
from sentsweep.trainables.registry import get_method


def sample_params(spec: SearchSpaceSpec, n: int, seed: int = 0) -> list[dict]:
    """``n`` trial configs the space gives under a seeded random sampler (each told 0.0)."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append(spec.sample(trial))
        study.tell(trial, 0.0)
    return out


class SpaceContract:
    """A space suggests, every sampled point is a valid trial config of its method, its first point
    names exactly what it suggests on that branch, and Tune's searcher holding it pickles."""

    @pytest.fixture
    def space(self, space_name: str) -> SearchSpaceSpec:
        return SEARCH_SPACES[space_name]

    def test_samples_are_valid_configs(self, space: SearchSpaceSpec) -> None:
        method = get_method(space.method)
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        for _ in range(30):
            trial = study.ask()
            method.parse(space.sample(trial), source=space.name)
            study.tell(trial, 0.0)

    def test_first_point_names_what_the_space_suggests(self, space: SearchSpaceSpec) -> None:
        for point in (space.first_point, *space.extra_points):
            study = optuna.create_study()
            study.enqueue_trial(point)
            assert space.sample(study.ask()) == point

    def test_the_searcher_suggests_and_pickles(self, space: SearchSpaceSpec, tmp_path: Path) -> None:
        assert pickle.loads(pickle.dumps(space.define_by_run)) == space.define_by_run
        config = SweepConfig.model_validate({"name": "s", "method": space.method, "search_space": space.name})
        searcher = build_searcher(config, space.define_by_run, [space.first_point])
        first = searcher.suggest("t1")
        assert first is not None and all(first[k] == v for k, v in space.first_point.items())
        assert searcher.suggest("t2") not in (None, Searcher.FINISHED), f"space {space.name} suggested nothing"
        searcher.save(str(tmp_path / "searcher.json"))  # Tune's searcher state: JSON, never a pickle
        again = build_searcher(config, space.define_by_run, [space.first_point])
        again.restore(str(tmp_path / "searcher.json"))
        assert isinstance(pickle.loads(pickle.dumps(again)), type(again)), "Tune pickles the searcher into tuner.pkl"
