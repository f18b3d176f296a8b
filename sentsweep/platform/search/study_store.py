"""The sweep's Optuna study: one journal in the sweep folder, its only record (JSON only: reading it runs no code).
On S3 each append is one object written with ``If-None-Match: *``, so of two writers one wins and the other
reads what it missed and takes the next number."""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import optuna
from optuna.storages.journal import BaseJournalBackend

from sentsweep.errors import ConfigError
from sentsweep.platform.location import SweepLocation
from sentsweep.platform.s3 import T, s3_call, s3_client

#: The study's journal in the sweep folder (a file; on S3, a folder of numbered objects).
JOURNAL_FILE = "optuna_journal.log"


@dataclass(frozen=True)
class StudyStore:
    uri: str
    endpoint_url: str | None = None

    @property
    def journal_uri(self) -> str:
        return posixpath.join(self.uri, JOURNAL_FILE)

    def storage(self, *, create: bool = True) -> optuna.storages.JournalStorage | None:
        """The study's journal; None when ``create`` is False and the folder holds no study yet."""
        if "://" not in self.uri:
            if not create and not Path(self.journal_uri).is_file():
                return None
            return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(self.journal_uri))
        parsed = urlparse(self.uri)
        if parsed.scheme != "s3":
            raise ConfigError(f"a sweep folder on {parsed.scheme}:// cannot hold the Optuna study: use a local "
                              "folder or s3://", field="storage_path")
        backend = S3JournalBackend(parsed.netloc, posixpath.join(parsed.path.lstrip("/"), JOURNAL_FILE),
                                   s3_client(self.endpoint_url))
        return optuna.storages.JournalStorage(backend) if create or backend.read_logs(0) else None


def load_study(store: StudyStore | SweepLocation) -> optuna.Study | None:
    """The study of a sweep folder as its journal holds it now; None when it has none yet."""
    if isinstance(store, SweepLocation):
        store = StudyStore(store.uri, store.endpoint_url)
    storage = store.storage(create=False)
    if storage is None:
        return None
    try:
        (summary,) = optuna.get_all_study_summaries(storage, include_best_trial=False)
    except ValueError:
        raise ConfigError("the journal does not hold exactly one study", file=store.journal_uri) from None
    return optuna.load_study(study_name=summary.study_name, storage=storage)


#: The digits of a batch's number in its object name (names sort as numbers).
DIGITS = 12
#: How many batches a read fetches at once (a resumed sweep reads its whole journal).
READERS = 16
#: S3's answers to a conditional PUT whose object another writer created first.
TAKEN = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})


class S3JournalBackend(BaseJournalBackend):
    """Optuna journal logs as numbered objects under ``s3://bucket/prefix/``."""

    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self._batches: list[list[dict[str, Any]]] = []  # every batch read so far, in order

    def _answered(self, request: Callable[[], T], conflicts: frozenset[str] = frozenset()) -> T | None:
        return s3_call(request, f"s3://{self.bucket}/{self.prefix}", "the storage did not answer", conflicts)

    def _key(self, number: int) -> str:
        return f"{self.prefix}/{number:0{DIGITS}d}.jsonl"

    def _new_keys(self) -> Iterator[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        start = self._key(len(self._batches) - 1) if self._batches else ""
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/", StartAfter=start):
            for item in page.get("Contents", []):
                yield item["Key"]

    def _refresh(self) -> None:
        """Read the batches written since the last read (a gap ends it: that batch is being written)."""
        keys = []
        for key in self._new_keys():
            if key != self._key(len(self._batches) + len(keys)):
                break
            keys.append(key)
        with ThreadPoolExecutor(max_workers=READERS) as pool:
            bodies = pool.map(lambda key: self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read(), keys)
            for body in bodies:
                self._batches.append([json.loads(line) for line in body.decode("utf-8").splitlines() if line])

    def read_logs(self, log_number_from: int) -> list[dict[str, Any]]:
        self._answered(self._refresh)
        return [log for batch in self._batches for log in batch][log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        body = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode("utf-8")
        while True:  # another writer took this number: read its batch, take the next one
            self._answered(self._refresh)
            key = self._key(len(self._batches))
            put = functools.partial(self.client.put_object, Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*")
            if self._answered(put, TAKEN) is not None:
                return
