"""How a sweep's parent run ended, in one tag, and which ends a resume may continue.

MLflow's run status has three ends (FINISHED, FAILED, KILLED); a sweep needs to tell apart an end to
continue from an end to leave alone, so the driver also sets ``sentsweep.status`` on the parent run:

- ``running``: a driver holds the sweep (its lock, :mod:`~sentsweep.platform.folder.lock`, says which);
- ``finished``: the trials ran and finalize completed (FINISHED);
- ``interrupted``: SIGINT or SIGTERM stopped it after Tune saved its state (KILLED); resumable;
- ``crashed``: the driver raised an unexpected error (FAILED); resumable, since the cause may be passing
  (a tracking or storage outage);
- ``failed``: it cannot succeed as configured (FAILED): a user error (bad config, unreadable data) or no
  trial finished; resuming would fail the same way, so ``--resume-interrupted`` starts a new sweep instead.

A parent left RUNNING by a killed driver (SIGKILL, a lost node) is resumable once its lock expired; while
the lock is live, the resume is refused (another process is running the sweep). A KILLED parent without
the tag (a sweep from before the tag) counts as interrupted.
"""

from __future__ import annotations

from sentsweep.tracking.vocabulary import STATUS_TAG

RESUMABLE: frozenset[str] = frozenset({"interrupted", "crashed"})


def is_resumable(run_status: str, tags: dict[str, str]) -> bool:
    """Whether a parent run of ``run_status`` and ``tags`` is a sweep to continue (see the module doc; a
    RUNNING one is, and its lock decides whether now)."""
    state = tags.get(STATUS_TAG)
    if run_status == "RUNNING":
        return True
    if state is None:
        return run_status == "KILLED"
    return state in RESUMABLE
