"""Files where the Hugging Face hub's cache keeps them, for tests that stage data and models offline as the hub
delivers them."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def hf_cache_file(cache: Path, repo: str, relative: str, *, kind: str = "datasets", commit: str = "c0ffee",
                  ref: str = "main") -> Path:
    """A file where the hub's cache keeps it: ``<kind>--org--name/snapshots/<commit>/<relative>`` plus the ref."""
    folder = cache / f"{kind}--{repo.replace('/', '--')}"
    (folder / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
    (folder / "refs" / ref).write_text(commit)
    path = folder / "snapshots" / commit / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def nli_parquet(path: Path, labels: list[int], *, hub_features: bool) -> None:
    """An NLI parquet shard (premise, hypothesis, label), with the hub's label names in its metadata or without."""
    table = pa.table({"premise": [f"p{i}" for i in range(len(labels))],
                      "hypothesis": [f"h{i}" for i in range(len(labels))], "label": labels})
    if hub_features:
        names = ["entailment", "neutral", "contradiction"]
        info = {"info": {"features": {"label": {"names": names, "_type": "ClassLabel"}}}}
        table = table.replace_schema_metadata({b"huggingface": json.dumps(info).encode()})
    pq.write_table(table, path)
