"""Where the data lives: an explicit directory, ``SENTSWEEP_DATA``, or the bundled sample.

Every data directory uses one layout, SentEval's ``downstream/`` folder renamed ``senteval/`` plus a
``corpora/`` folder (docs/own-data.md)::

    root/senteval/STS/STS12-en-test/STS.input.MSRpar.txt
    root/senteval/SICK/SICK_train.txt
    root/corpora/enwiki_gensim_sample.txt

The bundled sample (``sentsweep/data/sample``) has the same layout, so the same loaders read both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sentsweep.config import DATA_ENV, data_dir_from_env
from sentsweep.errors import DataError

#: The small sample shipped inside the package (made by ``python -m tools.make_sample``, beside the package).
SAMPLE_DIR: Path = Path(__file__).resolve().parent / "sample"

HOW_TO_GET_DATA = (
    f"point a sweep's data_dir, a command's --data-dir or ${DATA_ENV} at a directory in the SentEval layout "
    "(senteval/..., corpora/...; see docs/data.md)"
)


@dataclass(frozen=True)
class DataSource:
    """A data directory in the SentEval layout, and whether it is the bundled sample."""

    root: Path
    is_sample: bool

    def path(self, relative: str | Path) -> Path:
        """The absolute path of ``relative`` under the root (no existence check)."""
        return self.root / relative

    def require(self, relative: str | Path, *, hint: str = "") -> Path:
        """The path of ``relative`` under the root; a DataError saying how to get data when absent.

        ``hint`` (e.g. where a dataset missing from the shared data can be downloaded) is appended.
        """
        path = self.path(relative)
        if not path.exists():
            raise missing_data_error(path, self, hint=hint)
        return path


def missing_data_error(path: Path, source: DataSource | None = None, *, hint: str = "") -> DataError:
    """The error for a data file that is not there, naming the path and how to get the data."""
    where = " (the bundled sample does not include it)" if source is not None and source.is_sample else ""
    extra = f". {hint}" if hint else ""
    return DataError(f"missing data file{where}; {HOW_TO_GET_DATA}{extra}", file=path)


def resolve_data_dir(data_dir: str | Path | DataSource | None = None) -> DataSource:
    """Pick the data directory: explicit argument > ``SENTSWEEP_DATA`` > the bundled sample.

    An explicit directory (or one named by ``SENTSWEEP_DATA``) that does not exist is an error naming
    it; nothing falls back silently to the sample once a directory has been asked for. A DataSource is
    returned unchanged, so loaders can be handed either.
    """
    if isinstance(data_dir, DataSource):
        return data_dir
    if data_dir is not None:
        return _existing_source(Path(data_dir).expanduser(), "data directory")
    from_env = data_dir_from_env()
    if from_env is not None:
        return _existing_source(from_env, f"data directory named by {DATA_ENV}")
    return DataSource(root=SAMPLE_DIR, is_sample=True)


def _existing_source(root: Path, what: str) -> DataSource:
    if not root.is_dir():
        raise DataError(f"{what} does not exist or is not a directory; {HOW_TO_GET_DATA}", file=root)
    resolved = root.resolve()
    return DataSource(root=resolved, is_sample=resolved == SAMPLE_DIR)
