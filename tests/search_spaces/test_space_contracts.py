"""Every registered search space passes :class:`SpaceContract` (a new space is covered by registering it)."""

from __future__ import annotations

import pytest

from sentsweep.search_spaces import SEARCH_SPACES
from tests.search_spaces.space_contract import SpaceContract


class TestEveryRegisteredSpace(SpaceContract):
    @pytest.fixture(params=sorted(SEARCH_SPACES))
    def space_name(self, request: pytest.FixtureRequest) -> str:
        return request.param
