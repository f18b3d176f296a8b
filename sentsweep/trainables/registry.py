"""Trainables by method name: the Ray function, its config type, whether actors can be reused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentsweep.errors import ConfigError
from sentsweep.trainables.base import Method, TrialConfig
from sentsweep.trainables.cosent import COSENT, train_cosent
from sentsweep.trainables.multiview import MULTIVIEW, train_multiview
from sentsweep.trainables.sncse import SNCSE, train_sncse


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
    "sncse": TrainableSpec("sncse", train_sncse, SNCSE),
    "multiview": TrainableSpec("multiview", train_multiview, MULTIVIEW),
}


def get_trainable(name: str) -> TrainableSpec:
    """The trainable of method ``name``; unknown names raise ConfigError listing the known ones."""
    try:
        return TRAINABLES[name]
    except KeyError:
        raise ConfigError(
            f"unknown method '{name}'; known: {', '.join(TRAINABLES)}", field="method"
        ) from None


def load_trained_encoder(folder: str | Path, device: str | None = None) -> Any:
    """The embedder saved in ``folder`` by any method: a multi-view model (``multiview.json``), an SNCSE
    model (``sncse.json``, prompt templates and MLP kept) or a transformer encoder (a saved folder, the
    ``minilm`` alias or a hub id)."""
    path = Path(folder)
    if any((path / sub / "multiview.json").is_file() for sub in ("", "best", "model")):
        from sentsweep.trainables.multiview import load_multiview_encoder

        return load_multiview_encoder(path, device=device)
    if (path / "sncse.json").is_file():
        from sentsweep.methods.sncse.model import SncseModel

        return SncseModel.load(path, device=device)
    from sentsweep.methods.encoders import ENCODER_CONFIG_FILE, EncoderSettings, TransformerEncoder

    if (path / ENCODER_CONFIG_FILE).is_file():
        return TransformerEncoder.load(path, device=device)
    return TransformerEncoder(str(folder), EncoderSettings(), device=device)
