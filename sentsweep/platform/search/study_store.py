"""The sweep's Optuna study: one journal in the sweep folder (Optuna's ``JournalStorage``), written as the searcher
works. It is the study's only record: a resumed searcher continues from it, a warm start and the plots read it,
``sentsweep dashboard`` serves it. In a local folder it is the file :data:`JOURNAL_FILE`; on ``s3://`` the objects
under that name (:class:`~.journal_s3.S3JournalBackend`). The journal holds JSON only: reading it runs no code.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import optuna

from sentsweep.errors import ConfigError

#: The study's journal in the sweep folder (a file; on S3, a folder of numbered objects).
JOURNAL_FILE = "optuna_journal.log"


@dataclass(frozen=True)
class StudyStore:
    """Where a sweep folder's journal is: the folder's URI and the S3 endpoint (None: AWS, or a local folder)."""

    uri: str
    endpoint_url: str | None = None

    @property
    def journal_uri(self) -> str:
        return posixpath.join(self.uri, JOURNAL_FILE)

    def storage(self, *, create: bool = True) -> optuna.storages.JournalStorage:
        """Optuna's journal storage on the sweep folder; ``create=False`` refuses a folder without a journal."""
        if "://" not in self.uri:
            path = Path(self.uri) / JOURNAL_FILE
            if not create and not path.is_file():
                raise ConfigError("the sweep folder holds no Optuna study yet (no trial was suggested)",
                                  file=str(path))
            return optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(path)))
        parsed = urlparse(self.uri)
        if parsed.scheme != "s3":
            raise ConfigError(f"a sweep folder on {parsed.scheme}:// cannot hold the Optuna study: use a local "
                              "folder or s3://", field="storage_path")
        from sentsweep.platform.s3 import s3_client
        from sentsweep.platform.search.journal_s3 import S3JournalBackend

        backend = S3JournalBackend(parsed.netloc, posixpath.join(parsed.path.lstrip("/"), JOURNAL_FILE),
                                   s3_client(self.endpoint_url))
        if not create and not backend.read_logs(0):
            raise ConfigError("the sweep folder holds no Optuna study yet (no trial was suggested)",
                              file=self.journal_uri)
        return optuna.storages.JournalStorage(backend)


def load_study(store: StudyStore) -> optuna.Study | None:
    """The study of a sweep folder as its journal holds it now; None when it has none yet."""
    try:
        storage = store.storage(create=False)
    except ConfigError as exc:
        if "holds no Optuna study" in str(exc):
            return None
        raise
    try:
        (summary,) = optuna.get_all_study_summaries(storage, include_best_trial=False)
    except ValueError:
        raise ConfigError("the journal does not hold exactly one study", file=store.journal_uri) from None
    return optuna.load_study(study_name=summary.study_name, storage=storage)
