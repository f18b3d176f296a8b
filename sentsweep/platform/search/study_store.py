"""The sweep's Optuna study: one journal in the sweep folder, written as the searcher works.

The searcher (:mod:`.searcher`) keeps its study in Optuna's :class:`~optuna.storages.JournalStorage`, and every
``ask``, report and ``tell`` is appended there as it happens. That journal is the study's only record:

- a resumed sweep's searcher continues from it (:meth:`StudyStore.open`), not from a pickled copy;
- a warm start reads another sweep's journal (:func:`load_study`, then ``Study.add_trials``: :mod:`.warm_start`);
- ``sentsweep dashboard`` serves it with optuna-dashboard, live while the sweep runs (:mod:`.dashboard`);
- the plots and the final report read it (:meth:`SweepLocation.load_study
  <sentsweep.platform.location.SweepLocation.load_study>`).

In a local sweep folder the journal is the file :data:`JOURNAL_FILE` (Optuna's
:class:`~optuna.storages.journal.JournalFileBackend`); on ``s3://`` it is the objects under :data:`JOURNAL_FILE`
in the bucket (:class:`~.journal_s3.S3JournalBackend`, conditional writes). The journal holds JSON only: reading it
runs no code from the folder.
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
    """Where a sweep folder's journal is: the folder's URI and the S3 endpoint (None: AWS, or a local folder).
    Pickled with the searcher in place of the study."""

    uri: str
    endpoint_url: str | None = None

    @property
    def journal_uri(self) -> str:
        """How users name the journal (in messages)."""
        return posixpath.join(self.uri, JOURNAL_FILE)

    def storage(self, *, create: bool = True) -> optuna.storages.JournalStorage:
        """Optuna's journal storage on the sweep folder; ``create=False`` refuses a folder without a journal
        (a :class:`ConfigError` naming it) instead of starting an empty one there."""
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
