"""docs/configuration.md is the reference generated from the typed configs, and says something of every field."""

from __future__ import annotations

from pathlib import Path

from sentsweep.platform.config import SweepConfig
from sentsweep.platform.config_reference import COMMAND, REFERENCE_PATH, method_tables, reference, sweep_tables
from sentsweep.search_spaces import SEARCH_SPACES
from sentsweep.trainables.registry import METHODS

REPO = Path(__file__).resolve().parents[2]


def test_the_reference_in_the_repository_is_current() -> None:
    written = (REPO / REFERENCE_PATH).read_text(encoding="utf-8")
    assert written == reference(), f"{REFERENCE_PATH} is stale: run `{COMMAND}` (make config-reference)"


def test_every_field_has_a_meaning_and_a_row() -> None:
    rows = [*sweep_tables(), *method_tables()]
    unexplained = [row for row in rows if row.startswith("| `") and row.rstrip().endswith("|  |")]
    assert unexplained == [], "fields without a meaning in their config"
    text = reference()
    for name in SweepConfig.model_fields:
        if name != "optuna_storage":  # refused when set: not a setting
            assert f"| `{name}` |" in text or f"### `{name}`" in text, name
    assert "| `scheduler.grace_period` | integer | `2` | >= 1 |" in text
    for method in METHODS.values():
        assert f"### `{method.name}` ({method.config_cls.__name__})" in text
    assert "| `lambda` | number or null | `null` | > 0 |" in text  # by its YAML name (the field is lambda_)
    assert "| `pooling` | text or null | `null` | `cls`, `mean`, `max`, `first_last` |" in text
    for name in SEARCH_SPACES:
        assert f"| `{name}` |" in text


def test_the_corpus_fields_name_every_registered_corpus() -> None:
    """The SNCSE and multi-view `corpus` fields list the corpora a config may name, as the registry holds them."""
    from sentsweep.data.registry import REGISTRY

    corpora = [info.name for info in REGISTRY.values() if info.kind == "corpus"]
    for method in ("sncse", "multiview"):
        meaning = METHODS[method].config_cls.model_fields["corpus"].description
        assert f"({', '.join(corpora)})" in meaning and "prepared:NAME" in meaning, (method, meaning)
