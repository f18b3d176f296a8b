"""The methods by name, the Tune trainables generated from them, and :func:`load_encoder` for any run.

A new method is a :class:`~sentsweep.trainables.method.Method` subclass with an instance added to
:data:`METHODS`; its Ray Tune function trainable (:class:`~sentsweep.trainables.method.TuneFunction`),
its place in ``sentsweep train``/``sweep`` and the loading of its saved models follow from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentsweep.errors import ConfigError, DataError
from sentsweep.evaluation.protocols import Embedder
from sentsweep.trainables.checkpoints import BEST_DIR, MODEL_DIR, STATE_FILE, checkpoint_weights
from sentsweep.trainables.cosent import COSENT
from sentsweep.trainables.method import Method, TuneFunction
from sentsweep.trainables.multiview import MULTIVIEW
from sentsweep.trainables.sncse import SNCSE
from sentsweep.trainables.trial_config import TrialConfig

#: Every method by name.
METHODS: dict[str, Method[Any, Any]] = {method.name: method for method in (COSENT, SNCSE, MULTIVIEW)}


def get_method(name: str) -> Method[Any, Any]:
    """The method called ``name``; unknown names raise ConfigError listing the known ones."""
    try:
        return METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method '{name}'; known: {', '.join(METHODS)}", field="method") from None


def method_for_config(config: TrialConfig) -> Method[Any, Any]:
    """The registered method whose config class ``config`` is."""
    for method in METHODS.values():
        if type(config) is method.config_cls:
            return method
    raise ConfigError(f"no registered method takes a {type(config).__name__}", field="method")


@dataclass(frozen=True)
class TrainableSpec:
    """What the platform needs to run a method under Tune (:func:`trainable_spec`)."""

    name: str
    function: Callable[[dict[str, Any]], None]
    method: Method[Any, Any]
    reuse_actors: bool = True

    @property
    def config_cls(self) -> type[TrialConfig]:
        return self.method.config_cls


def trainable_spec(method: Method[Any, Any]) -> TrainableSpec:
    """The Tune trainable of ``method``: its generated function (picklable) and actor reuse."""
    return TrainableSpec(method.name, TuneFunction(method), method, method.reuse_actors)


def get_trainable(name: str) -> TrainableSpec:
    """The Tune trainable of method ``name``; unknown names raise ConfigError listing the known ones."""
    return trainable_spec(get_method(name))


#: Files that mark a folder holding a saved model (a transformer, or a method's own format).
_MODEL_FILES = ("model.safetensors", "config.json", *(m.saved_marker for m in METHODS.values() if m.saved_marker))


def saved_model_dir(path: str | Path) -> Path | None:
    """The folder holding the model saved in ``path``; None when ``path`` is not a folder (a model name).

    ``path`` may be the model folder itself, a standalone run's folder (its ``best/``), a Tune checkpoint
    (its best weights: ``best/`` or ``model/``) or a sweep trial's folder (its newest checkpoint).
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        return None
    if (folder / STATE_FILE).is_file():
        return checkpoint_weights(folder)
    checkpoints = sorted(p for p in folder.glob("checkpoint_*") if (p / STATE_FILE).is_file())
    if checkpoints:
        return checkpoint_weights(checkpoints[-1])
    for candidate in (folder, folder / BEST_DIR, folder / MODEL_DIR):
        if any((candidate / name).is_file() for name in _MODEL_FILES):
            return candidate
    raise DataError(f"no saved model here, in {BEST_DIR}/ or {MODEL_DIR}/ (nor a checkpoint)", file=folder)


def load_encoder(path: str | Path, device: str | None = None, **settings: Any) -> Embedder:
    """The embedder saved under ``path`` by any method, or a transformer by name.

    ``path``: a run's folder, its ``best/`` or ``model/``, a sweep trial's checkpoint or folder (see
    :func:`saved_model_dir`), a transformer folder, the ``minilm`` alias or a hub id. The method is the one
    whose ``saved_marker`` the folder holds (``sncse.json``, ``multiview.json``), else a plain transformer
    encoder (CoSENT's format; a CoSENT cross-encoder is refused, it has no sentence embedding).
    ``settings`` (``pooling``, ``max_length``, ``prompt_template``) override a transformer encoder's saved
    settings; SNCSE and multi-view models keep their own and refuse them. A transformer by name encodes up to the
    model's token limit unless ``max_length`` is given, as the trained models evaluate
    (:func:`~sentsweep.methods.encoders.with_eval_max_length`).
    """
    folder = saved_model_dir(path)
    if folder is None:
        from sentsweep.methods.encoders import EncoderSettings, TransformerEncoder, with_eval_max_length

        encoder = TransformerEncoder(str(path), EncoderSettings(**settings), device=device)
        return with_eval_max_length(encoder, settings.get("max_length"))
    marked = [m for m in METHODS.values() if m.saved_marker and (folder / m.saved_marker).is_file()]
    plain = [m for m in METHODS.values() if m.saved_marker is None]
    return (marked or plain)[0].load_encoder(folder, device=device, **settings)
