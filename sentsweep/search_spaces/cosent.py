"""CoSENT's rules for a space under a sweep's settings (:func:`check_cosent_space`).

A loss's own setting does nothing under another loss (lambda is CoSENT's, epsilon the contrastive baseline's, the
margin the triplet baseline's), and the cross-encoder (eq. 11) trains with the CoSENT loss only: a space that
would sample such a setting is refused before Ray starts, with the space to use instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sentsweep.errors import ConfigError
from sentsweep.methods.cosent import loss_parameters
from sentsweep.methods.cosent.losses.registry import LOSSES
from sentsweep.search_spaces.yaml_space import YamlSpace
from sentsweep.trainables.cosent import LOSS_SETTINGS


def check_cosent_space(name: str, space: YamlSpace, settings: Mapping[str, Any]) -> None:
    """Refuse space ``name`` when it samples a loss setting the sweep's fixed loss does not take, or samples the loss
    of a cross-encoder sweep (one ConfigError naming ``search_space``)."""
    sampled = space.can_search()
    loss = str(settings.get("loss"))
    if "loss" not in sampled and loss in LOSSES:  # an unknown loss is the trial config's to refuse
        dead = [n for n in sampled if n in LOSS_SETTINGS and n not in loss_parameters(loss)]
        if dead:
            raise ConfigError(f"space '{name}' searches {', '.join(dead)}, which loss '{loss}' (fixed) does not "
                              "take; use search_space 'cosent-losses', or loss 'cosent'", field="search_space")
    if settings.get("architecture") == "cross" and "loss" in sampled:
        raise ConfigError(f"space '{name}' searches the loss, which architecture 'cross' does not take (eq. 11 "
                          "is CoSENT's only); use search_space 'cosent'", field="search_space")
