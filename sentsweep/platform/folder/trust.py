"""The servers and runs a stored sweep folder may make this process contact: those its user names.

``resume``, ``sync`` and ``dashboard`` start from a sweep folder's manifest, which names the MLflow tracking server,
the sweep's parent run and the Optuna storage. Whoever can write the folder wrote them: for a folder in shared
storage (``s3://...``), anyone holding the bucket's keys. MLflow's client sends the login it finds to whatever host
it is given, and ``sync`` acts with that login on the runs the manifest names. So, before anything is contacted:

- a tracking URI the user declares (``--tracking-uri``; for a remote folder also ``$MLFLOW_TRACKING_URI``) must be
  the one the manifest names, and a remote folder whose user declared none is refused, naming the server;
- a folder given as a local path is the user's own disk: its manifest is trusted unless a declared URI differs;
- a remote folder's parent run must be that folder's own (its ``sentsweep.sweep_dir`` tag);
- a remote folder's Optuna storage is opened only when ``--optuna-storage`` names it;
- a remote folder is resumed (its Tune and searcher state unpickled) only in one of the platform's Ray pods, or
  with ``--trust-storage``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from sentsweep.config import in_platform_pod
from sentsweep.credentials import mask_uri
from sentsweep.errors import ConfigError
from sentsweep.platform.location import MANIFEST, SweepLocation, SweepManifest, is_shared_folder
from sentsweep.tracking.vocabulary import SWEEP_DIR_TAG

if TYPE_CHECKING:
    from mlflow import MlflowClient

#: MLflow's own variable for the tracking server: what a user running against a shared bucket has declared.
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"


def refuse_untrusted_state(location: SweepLocation, trust_storage: bool) -> None:
    """A :class:`ConfigError` when resuming the folder would unpickle what others may have written, here.

    Unpickling Tune's and the searcher's state runs whatever code the files name. A shared folder is written by
    every job holding the bucket's keys (on the cluster, every Ray pod). In one of the platform's Ray pods
    (:func:`~sentsweep.config.in_platform_pod`) such code gains nothing those pods do not already hold; anywhere
    else it would run with that place's credentials, so it is resumed there only with ``--trust-storage``.
    ``sync``, ``dashboard``, ``compare`` and ``--warm-start`` read JSON only."""
    if trust_storage or not is_shared_folder(location.uri) or in_platform_pod():
        return
    raise ConfigError(f"resuming {location.uri} unpickles Ray Tune's and the searcher's state, which anyone who can "
                      "write that storage could have replaced with code that would run here, with your credentials: "
                      "resume in the platform's Ray pods (sentsweep submit --resume), or pass --trust-storage if only "
                      "jobs you trust can write it", field="--trust-storage")


def refuse_unplain(uri: str, what: str, location: SweepLocation) -> None:
    """A :class:`ConfigError` when a stored URI holds a backslash, a control character or a space in its authority.
    Python's ``urlsplit`` and the HTTP clients (WHATWG's URL rules: ``\\`` ends the authority, tabs and newlines are
    dropped) read such URIs differently: ``http://evil\\@mlflow:5000`` names ``mlflow`` to ``urlsplit`` (and so to
    :func:`_same_server`) and ``evil`` to urllib3, which would get the login."""
    netloc = urlsplit(uri).netloc
    if "\\" in uri or any(ord(c) < 32 or ord(c) == 127 for c in uri) or any(c.isspace() for c in netloc):
        raise ConfigError(f"the sweep's {what} {mask_uri(uri)!r} is not a plain URI (a backslash, a control "
                          "character or a space in it): nothing was contacted", file=location.file_uri(MANIFEST))


def _same_server(a: str, b: str) -> bool:
    """Whether URIs ``a`` and ``b`` name one server and database: equal but for a login in them (stored URIs hold
    none: :mod:`sentsweep.credentials`) and a trailing ``/``."""
    def bare(uri: str) -> str:
        parts = urlsplit(uri)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])).rstrip("/")

    return bare(a) == bare(b)


def trusted_tracking_uri(manifest: SweepManifest, location: SweepLocation, declared: str | None) -> str:
    """The tracking URI of the sweep in ``location`` that this process may contact with its login: the manifest's,
    when the user declared it (``declared``: ``--tracking-uri`` or a resumed config's; for a remote folder also
    ``$MLFLOW_TRACKING_URI``) or the folder is a local path; otherwise a :class:`ConfigError` and nothing contacted."""
    from sentsweep.platform.config import resolve_tracking_uri

    stored = manifest.tracking_uri
    refuse_unplain(stored, "tracking URI", location)
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
    if not _same_server(resolve_tracking_uri(declared), stored):
        raise ConfigError(f"the sweep was tracked at {mask_uri(stored)}, not at {mask_uri(declared)} ({source}); "
                          "nothing was contacted", file=location.file_uri(MANIFEST))
    return stored


def same_folder(recorded: str | None, folder: str) -> bool:
    """Whether the folder a run recorded (its :data:`SWEEP_DIR_TAG`) is ``folder`` (a trailing ``/`` aside)."""
    return recorded is not None and recorded.rstrip("/") == folder.rstrip("/")


def refuse_foreign_parent(client: MlflowClient, manifest: SweepManifest, location: SweepLocation) -> None:
    """A :class:`ConfigError` when the manifest's parent run is not the sweep of this folder (another experiment's,
    or, for a remote folder, another folder's); MLflow is asked once."""
    run = client.get_run(manifest.parent_run_id)
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
