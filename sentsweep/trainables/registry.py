"""Trainables by method name: the Ray function, its config type, whether actors can be reused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sentsweep.errors import ConfigError
from sentsweep.trainables.base import Method, TrialConfig
from sentsweep.trainables.cosent import COSENT, train_cosent


@dataclass(frozen=True)
class TrainableSpec:
    """What the platform needs to run a method under Tune."""

    name: str
    function: Callable[[dict[str, Any]], None]
    method: Method
    reuse_actors: bool = True

    @property
    def config_cls(self) -> type[TrialConfig]:
        return self.method.config_cls


TRAINABLES: dict[str, TrainableSpec] = {
    "cosent": TrainableSpec("cosent", train_cosent, COSENT),
}


def get_trainable(name: str) -> TrainableSpec:
    """The trainable of method ``name``; unknown names raise ConfigError listing the known ones."""
    try:
        return TRAINABLES[name]
    except KeyError:
        raise ConfigError(
            f"unknown method '{name}'; known: {', '.join(TRAINABLES)}", field="method"
        ) from None
