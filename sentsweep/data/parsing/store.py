"""Parsed sentences in a SQLite file, keyed by the sentence's content hash (safe across processes)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from sentsweep.data.cache import content_hash
from sentsweep.data.parsing.spans import ParsedSentence


def sentence_key(text: str) -> str:
    """The store's key of a sentence: the SHA-1 of its text."""
    return content_hash([text], "sha1")


class TreeStore:
    """Parsed sentences in a SQLite file, keyed by the sentence's SHA-1 (safe across processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS trees (key TEXT PRIMARY KEY, tree TEXT NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=120)

    def get_many(self, texts: Sequence[str]) -> dict[str, ParsedSentence]:
        keys = {sentence_key(t): t for t in texts}
        found: dict[str, ParsedSentence] = {}
        items = list(keys)
        db = self._connect()
        try:
            for i in range(0, len(items), 500):
                chunk = items[i : i + 500]
                rows = db.execute(
                    f"SELECT key, tree FROM trees WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for key, tree in rows:
                    found[keys[key]] = ParsedSentence.from_json(json.loads(tree))
        finally:
            db.close()
        return found

    def put_many(self, parsed: dict[str, ParsedSentence]) -> None:
        if not parsed:
            return
        rows = [(sentence_key(t), json.dumps(p.to_json(), separators=(",", ":"))) for t, p in parsed.items()]
        db = self._connect()
        try:
            with db:
                db.executemany("INSERT OR IGNORE INTO trees (key, tree) VALUES (?, ?)", rows)
        finally:
            db.close()
