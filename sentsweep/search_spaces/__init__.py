"""Search spaces by name: one define-by-run Optuna function per method, plus presets.

>>> from sentsweep.search_spaces import SEARCH_SPACES
>>> SEARCH_SPACES["cosent"].first_point["scale"]
20.0
"""

from __future__ import annotations

from sentsweep.errors import ConfigError
from sentsweep.search_spaces.cosent import COSENT_LOSS_SPACE, COSENT_POOLING_SPACE, COSENT_SPACE
from sentsweep.search_spaces.multiview import MULTIVIEW_DEMO_SPACE, MULTIVIEW_PAIRS_SPACE, MULTIVIEW_SPACE
from sentsweep.search_spaces.sncse import SNCSE_ABLATION_SPACE, SNCSE_DEMO_SPACE, SNCSE_SPACE
from sentsweep.search_spaces.spec import DefineByRun, SearchSpaceSpec

SEARCH_SPACES: dict[str, SearchSpaceSpec] = {
    spec.name: spec
    for spec in (
        COSENT_SPACE, COSENT_LOSS_SPACE, COSENT_POOLING_SPACE,
        SNCSE_SPACE, SNCSE_DEMO_SPACE, SNCSE_ABLATION_SPACE,
        MULTIVIEW_SPACE, MULTIVIEW_DEMO_SPACE, MULTIVIEW_PAIRS_SPACE,
    )
}


def get_search_space(name: str) -> SearchSpaceSpec:
    """The space called ``name``; an unknown name raises ConfigError listing the known ones."""
    try:
        return SEARCH_SPACES[name]
    except KeyError:
        raise ConfigError(
            f"unknown search space '{name}'; known: {', '.join(SEARCH_SPACES)}", field="search_space"
        ) from None


__all__ = ["SEARCH_SPACES", "DefineByRun", "SearchSpaceSpec", "get_search_space"]
