"""``constituency: auto`` records the backend that ran and warns loudly when it fell back to the derived tree."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest

from sentsweep.data.parsing import Parser, make_backend
from sentsweep.methods.multiview.model import MultiViewSettings, constituency_metrics, record_parser

NO_PARSER = importlib.util.find_spec("benepar") is None and importlib.util.find_spec("stanza") is None
needs_no_parser = pytest.mark.skipif(not NO_PARSER, reason="a constituency parser is installed: auto would use it")


@needs_no_parser
def test_auto_falls_back_with_a_warning_and_the_reasons(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sentsweep.data.parsing.backends"):
        backend = make_backend("auto")
    assert backend.name == "derived"
    assert "benepar is not installed" in (backend.fallback_reason or "")
    assert "stanza is not installed" in (backend.fallback_reason or "")
    assert any("FELL BACK" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_a_named_backend_is_no_fallback(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        backend = make_backend("derived")
    assert backend.fallback_reason is None  # type: ignore[attr-defined]
    assert not caplog.records


@needs_no_parser
def test_the_model_records_the_fallback(parse_cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = MultiViewSettings(views=("dep", "const"), constituency="auto")
    parser = Parser("auto", cache=parse_cache)
    try:
        parser.nlp  # noqa: B018 - a missing spaCy pipeline skips
    except Exception as exc:  # pragma: no cover - depends on the installed spaCy pipeline
        pytest.skip(f"no English spaCy pipeline: {exc}")
    with caplog.at_level(logging.WARNING):
        record_parser(settings, parser)
    assert settings.constituency_fallback is True
    assert "/derived-" in (settings.parser_backend or "")
    assert constituency_metrics(settings) == {"constituency_fallback": 1.0}
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("FELL BACK" in m for m in warned) and any("dep+const" in m for m in warned)

    named = MultiViewSettings(views=("dep", "const"), constituency="derived")
    record_parser(named, Parser("derived", cache=parse_cache))
    assert named.constituency_fallback is False
    assert constituency_metrics(named) == {"constituency_fallback": 0.0}
