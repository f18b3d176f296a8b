"""How a trial says that it did not resume where Tune's experiment snapshot said.

A trial resumes from an older checkpoint, or from scratch, in two cases:

- the checkpoint Tune's snapshot names was deleted after the snapshot
  (:mod:`sentsweep.platform.driver.trainable` restores the newest one left, or none, and calls
  :func:`note_tune_fallback` in the trial's process);
- the checkpoint restored is corrupt, and the loop falls back to the previous one or to step 0
  (:meth:`sentsweep.trainables.loop.TrainingLoop.restore`).

The trial's first report after such a restore carries :data:`RESTORED_FROM_KEY` (``checkpoint <step>`` or
``scratch``) and :data:`RESTORE_REASON_KEY`. The driver prints :func:`restore_line` and tags the trial's run with
both (:mod:`sentsweep.platform.driver.callbacks`, :mod:`sentsweep.platform.tracking.parent_run`). No Ray import here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

#: Where the trial resumed from: ``checkpoint <step>`` or :data:`SCRATCH` (also the run's tag name).
RESTORED_FROM_KEY = "sentsweep.restored_from"
#: Why it did not resume from the checkpoint Tune named (also the run's tag name).
RESTORE_REASON_KEY = "sentsweep.restore_reason"
#: When it happened, in Unix seconds (a run's tag only): a run keeps the newest note.
RESTORED_AT_TAG = "sentsweep.restored_at"
SCRATCH = "scratch"

#: Fallbacks of Tune's restore in this process, by trial folder, until the trial takes them.
_tune_fallbacks: dict[str, str] = {}


def resumed_at(step: int | None) -> str:
    """The value of :data:`RESTORED_FROM_KEY` for a resume from the checkpoint of ``step`` (None: from scratch)."""
    return SCRATCH if step is None else f"checkpoint {step}"


def note_tune_fallback(trial_folder: str, reason: str) -> None:
    """Tune's restore of the trial in ``trial_folder`` fell back (called in the trial's process)."""
    _tune_fallbacks[trial_folder.rstrip("/")] = reason


def take_tune_fallback(trial_folder: str) -> str | None:
    """The reason noted for ``trial_folder`` by :func:`note_tune_fallback`, once; None when Tune's restore did not
    fall back. Keyed by folder, so a reused actor never hands one trial's note to the next."""
    return _tune_fallbacks.pop(trial_folder.rstrip("/"), None)


class TuneFallback:
    """Tune's fallback reason for one trial (:func:`take_tune_fallback`), for each attempt of the trial until one
    has reported: that report carried it. An out-of-memory retry then resumes from its own checkpoint, which is no
    fallback."""

    def __init__(self, trial_folder: str) -> None:
        self.reason = take_tune_fallback(trial_folder)

    def reporting(self, report: Callable[[dict[str, float], Any], T]) -> Callable[[dict[str, float], Any], T]:
        """``report``, clearing :attr:`reason` once a report went out."""

        def forward(metrics: dict[str, float], checkpoint: Any) -> T:
            self.reason = None
            return report(metrics, checkpoint)

        return forward


def restore_note(result: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """Where a reported trial resumed from and why, when ``result`` is its first report after a fallback."""
    restored = (result or {}).get(RESTORED_FROM_KEY)
    if not isinstance(restored, str):
        return None
    return restored, str((result or {}).get(RESTORE_REASON_KEY) or "")


def restore_line(label: str, result: Mapping[str, Any] | None) -> str | None:
    """The one line the driver prints for a trial's fallback, e.g. ``trial t03 resumed from checkpoint 16
    (not the one Tune named): checkpoint_000002 is gone``."""
    note = restore_note(result)
    if note is None:
        return None
    restored, reason = note
    where = "restarted from scratch" if restored == SCRATCH else f"resumed from {restored}"
    return f"trial {label} {where} (not the checkpoint Tune named): {reason}"


def retry_note(checkpoint_path: str | None, error: str) -> tuple[str, str]:
    """Where a failed trial that Tune retries starts again (its latest checkpoint's folder, or scratch) and why."""
    restored = f"checkpoint {checkpoint_path.rstrip('/').rsplit('/', 1)[-1]}" if checkpoint_path else SCRATCH
    return restored, error


def retry_line(label: str, note: tuple[str, str]) -> str:
    """The one line the driver prints when Tune retries a failed trial, e.g. ``trial t03 failed and restarts from
    scratch: ActorDiedError: the node was lost``."""
    restored, error = note
    where = "from scratch" if restored == SCRATCH else f"from {restored}"
    error = error if len(error) <= 300 else error[:297] + "..."
    return f"trial {label} failed and restarts {where}: {error}"
