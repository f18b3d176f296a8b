"""Find a config's interrupted sweep, so that running the same command again continues it.

``sentsweep sweep CONFIG --resume-interrupted`` is what a Kubernetes RayJob runs (k8s/sweep): when the head is lost,
KubeRay retries the job on a fresh cluster with the same entrypoint, and the sweep must continue from its folder in
shared storage rather than start over.

Only folders of the same identity (:mod:`~sentsweep.platform.identity`) are considered: the config's name and the
owner recorded in the manifest (another user's run of the same config is theirs). Of those, only the newest, and only
when its parent run is resumable (:func:`is_resumable`). An older unfinished sweep is never picked up, so a finished
sweep followed by a new command starts a new one. The config given must be the sweep's own (:mod:`.resume`). A folder
without a sweep's manifest is passed over; a manifest the storage does not serve stops the command with a
:class:`~sentsweep.errors.StorageError` naming it: that folder may be the sweep to continue.

How a parent run ended is its ``sentsweep.status`` tag, beside MLflow's run status:

- ``running``: a driver holds the sweep (its lock, :mod:`~sentsweep.platform.folder.lock`, says which);
- ``finished``: the trials ran and finalize completed (FINISHED);
- ``interrupted``: SIGINT or SIGTERM stopped it after Tune saved its state (KILLED); resumable;
- ``crashed``: the driver raised an unexpected error (FAILED); resumable, since the cause may be passing (a tracking
  or storage outage);
- ``failed``: it cannot succeed as configured (a user error, or no trial finished; FAILED): ``--resume-interrupted``
  starts a new sweep instead.

A parent left RUNNING by a killed driver is resumable once its lock expired; while the lock is live, the resume is
refused. A KILLED parent without the tag counts as interrupted.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import pyarrow.fs

from sentsweep.errors import ConfigError, StorageError
from sentsweep.platform.config import SweepConfig
from sentsweep.platform.folder.trust import same_folder
from sentsweep.platform.identity import sweep_owner
from sentsweep.platform.location import SweepManifest, is_shared_folder, locate
from sentsweep.tracking.vocabulary import STATUS_TAG, SWEEP_DIR_TAG

_STAMP = r"-\d{8}-\d{6}(-[0-9a-f]+)?$"

log = logging.getLogger(__name__)

RESUMABLE: frozenset[str] = frozenset({"interrupted", "crashed"})


def is_resumable(run_status: str, tags: dict[str, str]) -> bool:
    """Whether a parent run of ``run_status`` and ``tags`` is a sweep to continue (a RUNNING one is, and its lock
    decides whether now)."""
    if run_status == "RUNNING":
        return True
    state = tags.get(STATUS_TAG)
    return run_status == "KILLED" if state is None else state in RESUMABLE


@dataclass(frozen=True)
class PreviousSweep:
    """The newest sweep folder of a config's identity, and how its MLflow parent run ended."""

    uri: str
    manifest: SweepManifest
    status: str
    tags: dict[str, str]

    @property
    def interrupted(self) -> bool:
        return is_resumable(self.status, self.tags)


def sweep_folders(config: SweepConfig) -> list[str]:
    """The sweep folders of ``config`` (its name, under its storage_path), oldest first by their stamp."""
    root = config.storage_path.rstrip("/")
    probe = locate(f"{root}/probe", config.storage_endpoint_url)
    if probe.filesystem is not None:
        fs, path = probe.filesystem, probe.storage_path
    else:
        fs, path = pyarrow.fs.FileSystem.from_uri(probe.uri.rsplit("/", 1)[0])
    pattern = re.compile("^" + re.escape(config.name) + _STAMP)
    infos = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
    names = sorted(i.base_name for i in infos if i.type == pyarrow.fs.FileType.Directory
                   and pattern.match(i.base_name))
    base = probe.uri.rsplit("/", 1)[0]
    return [f"{base}/{name}" for name in names]


def previous_sweep(config: SweepConfig, owner: str | None = None) -> PreviousSweep | None:
    """The newest sweep folder of ``config``'s identity (``owner``: default :func:`sweep_owner`) with a
    manifest, and its parent run's status; a :class:`StorageError` when a manifest cannot be read. ``config`` is a
    resolved one: a folder whose manifest names another tracking server than ``config.tracking.uri`` is skipped
    before that server is contacted (the credentials of this process would go to it), and a shared folder whose parent
    run is another folder's is passed over (a resume would refuse it: :mod:`..folder.trust`)."""
    owner = owner or sweep_owner()
    found: list[tuple[float, str, SweepManifest]] = []
    for uri in sweep_folders(config):
        try:
            manifest = locate(uri, config.storage_endpoint_url).read_manifest()
        except ConfigError:  # no manifest, or not a sweep's: not a sentsweep sweep (or not yet one)
            continue
        except StorageError as exc:
            raise StorageError(f"{exc.message}; --resume-interrupted cannot tell whether this folder is the sweep to "
                               "continue, so it starts none", file=exc.file) from exc
        if manifest.owner != owner or manifest.config.get("name") != config.name:  # another identity's
            continue
        if manifest.tracking_uri != config.tracking.uri:  # never contacted: a planted manifest would get the login
            log.warning("%s is not resumed: its manifest names the tracking server %s, not this config's %s",
                        uri, manifest.tracking_uri, config.tracking.uri)
            continue
        found.append((manifest.created, uri, manifest))
    # newest first by the manifest's own time; a shared folder whose run is another folder's is passed over for the
    # next (a manifest planted with a later time would otherwise hide the sweep to resume)
    for _, uri, manifest in sorted(found, key=lambda item: item[0], reverse=True):
        previous = PreviousSweep(uri, manifest, *_run_state(manifest))
        if is_shared_folder(uri) and previous.tags and not same_folder(previous.tags.get(SWEEP_DIR_TAG), uri):
            log.warning("%s is not resumed: its manifest names the sweep run of %s (a folder moved, or copied there)",
                        uri, previous.tags.get(SWEEP_DIR_TAG) or "no sweep folder")  # resume would refuse it
            continue
        return previous
    return None


def interrupted_sweep(config: SweepConfig, owner: str | None = None) -> str | None:
    """The folder to resume for ``config`` and ``owner``, or None when the newest sweep of that identity
    finished (or there is none)."""
    previous = previous_sweep(config, owner)
    return previous.uri if previous is not None and previous.interrupted else None


def _run_state(manifest: SweepManifest) -> tuple[str, dict[str, str]]:
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        run = MlflowClient(tracking_uri=manifest.tracking_uri).get_run(manifest.parent_run_id)
    except MlflowException as exc:
        if getattr(exc, "error_code", "") == "RESOURCE_DOES_NOT_EXIST":
            return "FINISHED", {}  # the run was deleted: nothing to reattach to, start anew
        raise
    return run.info.status, dict(run.data.tags)
