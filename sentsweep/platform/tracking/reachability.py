"""Whether a tracking server's store answers now, asked once without MLflow's retries (``/health`` answers while
the server's database is down, and every call would wait out the client's retry budget)."""

from __future__ import annotations

from urllib.parse import urlsplit

#: The HTTP statuses MLflow's client retries: a probe answered with one of them got no answer from the store.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:300] if str(exc).strip() else type(exc).__name__


def probe(uri: str) -> tuple[int | None, str | None]:
    """The status the store of HTTP server ``uri`` answers a search with, asked once with this process's login, and
    why it gave no answer (a failed connection, or a status MLflow retries); ``(None, None)`` for another store."""
    if urlsplit(uri).scheme not in ("http", "https"):
        return None, None
    from sentsweep._compat.mlflow import request_once

    try:
        response = request_once(uri, "/api/2.0/mlflow/experiments/search", {"max_results": 1}, timeout=3.0)
    except Exception as exc:  # noqa: BLE001 - no answer at all: a refused connection, a timeout, TLS
        return None, first_line(exc)
    if response.status_code in RETRIED_STATUSES:
        return None, f"its store answers HTTP {response.status_code} {response.text.strip()[:200]}".rstrip()
    return response.status_code, None


def store_answers(uri: str) -> bool:
    return probe(uri)[1] is None
