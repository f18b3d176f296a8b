"""An Optuna journal backend on S3 (``BaseJournalBackend``): the study of a sweep folder on ``s3://``.

Each append is one object, ``<prefix>/<batch number, 12 digits>.jsonl``, written with a conditional PUT
(``If-None-Match: *``): of two writers that take the same number, S3 accepts one and refuses the other (412), which
reads what it missed and takes the next number. Readers list the objects after the last one they read. A bucket
that does not answer is a :class:`~sentsweep.errors.StorageError` naming the journal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from optuna.storages.journal import BaseJournalBackend

from sentsweep.errors import StorageError

T = TypeVar("T")

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

    def _answered(self, call: Callable[..., T], **kwargs: Any) -> T:
        """``call(**kwargs)``'s answer; any failure but a taken number is a :class:`StorageError`."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return call(**kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in TAKEN:
                raise
            raise StorageError(f"the storage did not answer (ClientError: {exc})",
                               file=f"s3://{self.bucket}/{self.prefix}") from None
        except BotoCoreError as exc:
            raise StorageError(f"the storage did not answer ({type(exc).__name__}: {exc})",
                               file=f"s3://{self.bucket}/{self.prefix}") from None

    def _key(self, number: int) -> str:
        return f"{self.prefix}/{number:0{DIGITS}d}.jsonl"

    def _new_keys(self) -> Iterator[str]:
        """The names of the batches written after the last one read, in order."""
        paginator = self.client.get_paginator("list_objects_v2")
        start = self._key(len(self._batches) - 1) if self._batches else ""
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/", StartAfter=start):
            for item in page.get("Contents", []):
                yield item["Key"]

    def _refresh(self) -> None:
        """Read the batches written since the last read (a gap in the numbers ends the read: that batch is being
        written)."""
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
        logs = [log for batch in self._batches for log in batch]
        return logs[log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        body = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode("utf-8")
        from botocore.exceptions import ClientError

        while True:
            self._answered(self._refresh)
            key = self._key(len(self._batches))
            try:
                self._answered(self.client.put_object, Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*")
                return
            except ClientError:  # another writer took this number: read its batch, take the next one
                continue
