"""The one spaCy loader: model resolution, the trimmed pipe sets, one load per process."""

from __future__ import annotations

import pytest

from sentsweep.data.spacy_models import SPACY_MODELS, load_spacy, resolve_spacy_model, spacy_model_id
from sentsweep.errors import ConfigError

spacy = pytest.importorskip("spacy")


@pytest.fixture(scope="module")
def package() -> str:
    try:
        return resolve_spacy_model()[0]
    except ConfigError as exc:  # pragma: no cover - depends on the installed pipelines
        pytest.skip(str(exc))


def test_resolution_picks_an_installed_default_and_names_the_field() -> None:
    try:
        package, model_id = resolve_spacy_model()
    except ConfigError:  # pragma: no cover - no pipeline installed
        pytest.skip("no English spaCy pipeline installed")
    assert package in SPACY_MODELS and model_id.startswith(package + "-")
    with pytest.raises(ConfigError, match="spacy download en_core_web_sm") as info:
        resolve_spacy_model("no_such_spacy_model_xyz", field="negation_model")
    assert info.value.field == "negation_model"


def test_pipe_sets_keep_what_their_users_need(package: str) -> None:
    assert load_spacy(package, "parser").pipe_names == ["tok2vec", "parser"]
    assert load_spacy(package, "tokenizer").pipe_names == []
    negation = load_spacy(package, "tagger-parser")
    assert {"tagger", "parser"} <= set(negation.pipe_names)
    assert "ner" not in negation.component_names  # excluded: never loaded
    assert {"lemmatizer", "attribute_ruler"} <= set(negation.disabled)  # loaded, run on demand
    assert "ner" in load_spacy(package, "full").pipe_names
    assert spacy_model_id(negation) == resolve_spacy_model(package)[1]


def test_a_pipeline_loads_once_per_process(package: str) -> None:
    assert load_spacy(package, "parser") is load_spacy(None, "parser")
    assert load_spacy(package, "parser") is not load_spacy(package, "tokenizer")
    with pytest.raises(ValueError, match="unknown pipe set"):
        load_spacy(package, "everything")  # type: ignore[arg-type]
