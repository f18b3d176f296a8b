"""The servers and runs a stored sweep folder may make this process contact: those its user names. Whoever can
write the folder wrote its manifest, and MLflow's client sends its login to any host it is given."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from sentsweep.config import in_platform_pod
from sentsweep.credentials import mask_uri
from sentsweep.errors import ConfigError
from sentsweep.platform.config import is_shared_folder, resolve_tracking_uri
from sentsweep.platform.location import MANIFEST, SweepLocation, SweepManifest
from sentsweep.tracking.vocabulary import SWEEP_DIR_TAG, run_or_none

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run

#: MLflow's own variable for the tracking server: what a user running against a shared bucket has declared.
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"


def refuse_untrusted_state(location: SweepLocation, trust_storage: bool) -> None:
    """A :class:`ConfigError` when resuming would unpickle state others may have written."""
    if trust_storage or not is_shared_folder(location.uri) or in_platform_pod():
        return
    raise ConfigError(f"resuming {location.uri} unpickles Ray Tune's and the searcher's state, which anyone who can "
                      "write that storage could have replaced with code that would run here, with your credentials: "
                      "resume in the platform's Ray pods (sentsweep submit --resume), or pass --trust-storage if only "
                      "jobs you trust can write it", field="--trust-storage")


def _bare(uri: str) -> str:
    """``uri`` without a login and a trailing ``/``."""
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])).rstrip("/")


def trusted_tracking_uri(manifest: SweepManifest, location: SweepLocation, declared: str | None) -> str:
    """The manifest's tracking URI, when the user declared it or the folder is local."""
    stored = manifest.tracking_uri
    # urlsplit and urllib3 read the host of a URI with a backslash, a control character or a space in its authority
    # differently (``http://evil\\@mlflow``): such a stored URI is refused
    if ("\\" in stored or any(ord(c) < 32 or ord(c) == 127 for c in stored)
            or any(c.isspace() for c in urlsplit(stored).netloc)):
        raise ConfigError(f"the sweep's tracking URI {mask_uri(stored)!r} is not a plain URI (a backslash, a control "
                          "character or a space in it): nothing was contacted", file=location.file_uri(MANIFEST))
    source = "--tracking-uri"
    if declared is None and is_shared_folder(location.uri):
        declared, source = os.environ.get(TRACKING_URI_ENV) or None, f"${TRACKING_URI_ENV}"
    if declared is None:
        if is_shared_folder(location.uri):
            raise ConfigError(f"a folder in shared storage could have been written by anyone with its keys, so your "
                              f"MLflow login goes only to a server you name: pass --tracking-uri (or set "
                              f"{TRACKING_URI_ENV}) naming your tracking server (this folder names "
                              f"{mask_uri(stored)})", file=location.file_uri(MANIFEST))
        return stored
    if _bare(resolve_tracking_uri(declared)) != _bare(stored):
        raise ConfigError(f"the sweep was tracked at {mask_uri(stored)}, not at {mask_uri(declared)} ({source}); "
                          "nothing was contacted", file=location.file_uri(MANIFEST))
    return stored


def same_folder(recorded: str | None, folder: str) -> bool:
    return recorded is not None and recorded.rstrip("/") == folder.rstrip("/")


def refuse_foreign_parent(client: MlflowClient, manifest: SweepManifest, location: SweepLocation) -> Run:
    """The manifest's parent run; a :class:`ConfigError` when it is not this folder's sweep, or not in the store."""
    if (run := run_or_none(client, manifest.parent_run_id)) is None:
        raise ConfigError(f"the manifest's sweep run {manifest.parent_run_id} is not in the tracking store "
                          f"{mask_uri(manifest.tracking_uri)} (deleted for good, or the store was replaced); "
                          "nothing was done", file=location.file_uri(MANIFEST))
    refusal = None
    if run.info.experiment_id != manifest.experiment_id:
        refusal = (f"run {manifest.parent_run_id} is in experiment {run.info.experiment_id}, not in the sweep's "
                   f"({manifest.experiment_id})")
    elif is_shared_folder(location.uri) and not same_folder(run.data.tags.get(SWEEP_DIR_TAG), location.uri):
        refusal = (f"run {manifest.parent_run_id} is the sweep run of "
                   f"{run.data.tags.get(SWEEP_DIR_TAG) or 'no sweep folder'}, not of {location.uri}")
    if refusal is not None:
        raise ConfigError(f"the manifest names a run that is not this folder's sweep ({refusal}); nothing was done",
                          file=location.file_uri(MANIFEST))
    return run
